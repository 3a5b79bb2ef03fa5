"""The native module's type stubs (python/ibdkit/_ibdkit.pyi) agree with the module that was built.

mypy's stubtest type-checks the stub, imports ibdkit._ibdkit and compares every name with it: a stub
that does not type-check (a name not imported), a name missing on either side, a method that is a
property on the other, an attribute writable in one and read-only in the other fail here rather than
in a user's editor. The module checked is the one these tests import (PYTHONPATH=BUILD/python).
"""
import inspect
import os
import pathlib
import re
import subprocess
import sys

from conftest import _need

# What stubtest reports about every nanobind type and function, whatever the stub says: nanobind's
# classes have their own metaclass and a constructor taking *args, its functions are nb_func objects
# (no Python signature to compare: stubtest calls them "not a function"), and its classes cannot be
# subclassed together (PEP 800's disjoint bases, which the stub leaves unmarked for older checkers).
# Each pattern names the object it is about, and is forgiven only where that object is nanobind's: a
# stub method over a runtime property, say, is still reported ("... is not a function" on a property).
NANOBIND_ARTIFACTS = [
    re.compile(r"^(?P<name>\S+) is inconsistent, metaclass differs$"),
    re.compile(r"^(?P<name>\S+)\.(__init__|__new__) is inconsistent, stub does not have \*args parameter \"args\"$"),
    re.compile(r"^(?P<name>\S+) is not a function$"),
    re.compile(r"^(?P<name>\S+) is inconsistent, stub is a staticmethod but runtime is not$"),
    re.compile(r"^(?P<name>\S+) is a disjoint base at runtime, but isn't marked with @disjoint_base in the stub$"),
]


def is_nanobind_artifact(finding):
    """Whether a stubtest finding is one of NANOBIND_ARTIFACTS about an object nanobind made."""
    import ibdkit._ibdkit as module
    for pattern in NANOBIND_ARTIFACTS:
        m = pattern.match(finding)
        if not m:
            continue
        obj = module
        for part in m["name"].split(".")[2:]:  # past "ibdkit._ibdkit"
            obj = inspect.getattr_static(obj, part, None)
        return obj is not None and type(obj).__module__ == "nanobind"
    return False


def stubtest(package_dir, tmp_path):
    """stubtest's findings on ibdkit._ibdkit (one line each) and its output."""
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n")
    env = dict(os.environ, PYTHONPATH=str(package_dir.parent), MYPYPATH=str(package_dir.parent))
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "ibdkit._ibdkit", "--concise",
                        "--mypy-config-file", str(config)],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert "not checking stubs" not in out, f"the stub does not type-check:\n{out[-4000:]}"
    assert r.returncode in (0, 1), f"stubtest failed to run:\n{out[-4000:]}"
    return [line for line in r.stdout.splitlines() if line.startswith("ibdkit._ibdkit")], out


def test_stubtest_finds_nothing_but_nanobind_artifacts(ibdkit, tmp_path):
    _need("mypy.stubtest", "pip install mypy (scripts/pydeps.sh installs it into build/venv)")
    package_dir = pathlib.Path(ibdkit.__file__).resolve().parent
    assert (package_dir / "_ibdkit.pyi").is_file(), f"{package_dir} has no _ibdkit.pyi beside the module"
    findings, out = stubtest(package_dir, tmp_path)
    assert findings or "Success: no issues found" in out, f"stubtest said neither:\n{out[-4000:]}"
    real = [f for f in findings if not is_nanobind_artifact(f)]
    assert not real, "the stub disagrees with the module:\n" + "\n".join(real)
