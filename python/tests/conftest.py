"""Shared fixtures for differential tests against Bitcoin Core's engine (py-bitcoinkernel)."""
import os
import pathlib
import sys

import pytest

from ibdkit_cli import cli_path, run_cli  # noqa: F401 (run_cli: the tests import it from here)

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("IBDKIT_TEST_DATA", ROOT / "tests" / "data"))


@pytest.fixture(scope="session")
def cli():
    """Path of the ibdkit binary under test (IBDKIT_CLI, else build/release/ibdkit)."""
    return cli_path()


@pytest.fixture(scope="session")
def shared():
    """The repository's real chain data (tests/data; origins and licences in its README)."""
    if not (DATA / "mainnet").exists():
        pytest.fail(f"{DATA} is incomplete: the repository carries it (tests/data/README.md)")
    return DATA


PBK_INSTALL = "py-bitcoinkernel (scripts/pydeps.sh installs it into build/venv: pip install py-bitcoinkernel==0.1.0a5)"
GO_INSTALL = "a Go toolchain for btcd (apt-get install golang-go, or set GO=/path/to/go)"


def on_ci():
    """True when CI=true (or 1/yes): missing prerequisites fail instead of skipping."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing(what, install):
    """A prerequisite is missing: skip with the reason locally; with CI=true, fail naming what to install."""
    msg = f"{what}; install {install}"
    if on_ci():
        pytest.fail(f"CI=true and {msg}", pytrace=False)
    pytest.skip(msg, allow_module_level=True)


def import_pbk():
    """Bitcoin Core's engine (py-bitcoinkernel's `pbk`), or a skip (a failure with CI=true)."""
    try:
        import pbk
    except Exception as e:  # ImportError, or the bundled libbitcoinkernel failing to load
        missing(f"Bitcoin Core's engine does not import ({type(e).__name__}: {e})", PBK_INSTALL)
    return pbk


def import_ibdkit():
    """The Python module of the build under test: BUILD/python beside IBDKIT_CLI (or PYTHONPATH)."""
    default = pathlib.Path(__file__).resolve().parents[2] / "build" / "release" / "ibdkit"
    cli = pathlib.Path(os.environ.get("IBDKIT_CLI", default))
    staged = cli.parent / "python"
    if (staged / "ibdkit").is_dir() and str(staged) not in sys.path:
        sys.path.insert(0, str(staged))
    try:
        import ibdkit
    except ImportError as e:
        missing(f"the ibdkit Python module beside {cli} does not import ({e})",
                "the module: build target _ibdkit (IBDKIT_BUILD_PYTHON=ON, scripts/pydeps.sh)")
    return ibdkit


