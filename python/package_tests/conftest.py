"""Fixtures of the Python package tests: a tiny generated chain and its replayed chainstate.

Run by ctest (python_package) with PYTHONPATH=BUILD/python (the module of the same build) and
IBDKIT_CLI=BUILD/ibdkit (to generate the chain and compare with the CLI).
"""
import json
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "tests"))

import ibdkit_cli  # noqa: E402 (python/tests/ibdkit_cli.py: the binary under test, shared with python/tests)


def _need(module, what):
    try:
        return __import__(module)
    except ImportError:
        msg = f"{module} is not installed: {what}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="session")
def ibdkit():
    try:
        import ibdkit as mod
    except ImportError as e:
        pytest.fail(f"cannot import ibdkit ({e}): build with IBDKIT_BUILD_PYTHON=ON and set "
                    "PYTHONPATH=BUILD/python, or pip install . (scripts/pydeps.sh installs nanobind)")
    return mod


@pytest.fixture(scope="session")
def cli():
    return ibdkit_cli.cli_path()


def run_cli(cli, *args):
    """ibdkit's standard output for args; a failing run raises."""
    return ibdkit_cli.run_cli(cli, *args).stdout


@pytest.fixture(scope="session")
def chain(cli, tmp_path_factory):
    """A 150-block regtest chain (gen-chain --preset tiny, XOR-obfuscated files)."""
    out = tmp_path_factory.mktemp("chain")
    run_cli(cli, "gen-chain", "--preset", "tiny", "--out", out, "--xor", "--no-progress")
    return out / "blocks"


@pytest.fixture(scope="session")
def cli_replay(cli, chain, tmp_path_factory):
    """The CLI's replay of the chain: (chainstate dir, JSON result)."""
    cs = tmp_path_factory.mktemp("cli-cs") / "chainstate"
    out = run_cli(cli, "replay", "--blocks-dir", chain, "--chainstate", cs, "--json", "-q")
    return cs, json.loads(out)


@pytest.fixture
def need_pyarrow():
    return _need("pyarrow", "pip install pyarrow (scripts/pydeps.sh installs it)")
