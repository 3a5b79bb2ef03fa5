"""The examples of docs/python.md run as written, on a generated chain laid out as they say
(`chain/blocks`, `cs` in the working directory): the blocks marked `run by` this file
(python/tests/doc_examples.py), the Python ones in one namespace, the shell ones in a shell, the
SwiftSync one as a script of its own in a fresh interpreter (its Dask workers import it again)."""
import os
import pathlib
import subprocess
import sys

from conftest import ROOT
from doc_examples import blocks_run_by

DOC = ROOT / "docs" / "python.md"
RUNNER = "python/package_tests/test_docs_examples.py"


def example_blocks():
    """The ```python blocks of docs/python.md's first section, "## Examples"."""
    text = DOC.read_text()
    start = text.count("\n", 0, text.index("\n## Examples\n"))
    end = text.count("\n", 0, text.index("\n## ", text.index("\n## Examples\n") + 1))
    return [b.code for b in blocks_run_by(RUNNER, "python.md") if start < b.line <= end]


def test_python_md_opens_with_examples():
    first = next(line for line in DOC.read_text().splitlines() if line.startswith("## "))
    assert first == "## Examples"
    assert len(example_blocks()) >= 4
    assert all(b.lang == "python" for b in blocks_run_by(RUNNER, "python.md")[:len(example_blocks())])


def cli_env(cli, tmp_path, **extra):
    """The environment of a subprocess that runs the CLI as `ibdkit` (PATH) or $IBDKIT_CLI: through a
    wrapper that drops LD_PRELOAD, which holds the sanitizer runtime for the interpreter under the
    asan preset while the CLI links its own (two runtimes abort)."""
    wrapper = tmp_path / "bin" / "ibdkit"
    wrapper.parent.mkdir(exist_ok=True)
    wrapper.write_text(f'#!/bin/sh\nunset LD_PRELOAD\nexec "{pathlib.Path(cli).resolve()}" "$@"\n')
    wrapper.chmod(0o755)
    return {**os.environ, "PATH": f"{wrapper.parent}:{os.environ['PATH']}", "IBDKIT_CLI": str(wrapper), **extra}


def test_examples_run(ibdkit, cli, chain, need_pyarrow, tmp_path, monkeypatch, capsys):
    (tmp_path / "chain").symlink_to(chain.parent, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for i, block in enumerate(example_blocks()):
        exec(compile(block, f"docs/python.md example {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "NotFound" in out and "dbcache must be in 0..1048576, got -5" in out
    assert "holds files and is not a chainstate" in out, "the refusal, not another error"
    assert namespace["stats"]["height"] == 150 and (tmp_path / "cs" / "IBDKIT_CHAINSTATE").exists()
    assert sorted(p.name for p in chain.parent.iterdir()) == ["blocks", "chain.json"], "nothing written beside the chain"

    rest = blocks_run_by(RUNNER, "python.md")[len(example_blocks()):]
    assert [b.lang for b in rest] == ["sh", "python"], "the SwiftSync example: a hintsfile, then the script"
    env = cli_env(cli, tmp_path)
    hints = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", rest[0].code], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert hints.returncode == 0, f"{rest[0].where()}: {hints.stderr}"
    (tmp_path / "swiftsync_example.py").write_text(rest[1].code)
    script = subprocess.run([sys.executable, "swiftsync_example.py"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert script.returncode == 0, f"{rest[1].where()}: {script.stderr[-3000:]}"
    assert script.stdout.split() == ["True", namespace["stats"]["hash_serialized_3"]], script.stdout


def test_example_scripts_run(ibdkit, cli, need_pyarrow, tmp_path):
    """docs/examples/*.py, notebook-style scripts, run as their headers say (no argument: a chain of
    their own), each in a fresh interpreter."""
    scripts = sorted((ROOT / "docs" / "examples").glob("*.py"))
    assert len(scripts) >= 2
    env = cli_env(cli, tmp_path, TMPDIR=str(tmp_path))
    for script in scripts:
        r = subprocess.run([sys.executable, script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"docs/examples/{script.name}: {r.stderr[-3000:]}"
        assert r.stdout.strip(), f"docs/examples/{script.name} printed nothing"
