"""Shared fixtures for differential tests against Bitcoin Core's engine (py-bitcoinkernel)."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("IBDKIT_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def cli():
    """Path of the ibdkit binary under test (IBDKIT_CLI, else build/release/ibdkit)."""
    path = pathlib.Path(os.environ.get("IBDKIT_CLI", ROOT / "build" / "release" / "ibdkit"))
    if not path.exists():
        pytest.fail(f"ibdkit binary not found at {path}; build first (make build)")
    return path


@pytest.fixture(scope="session")
def shared():
    if not SHARED.exists():
        pytest.skip("../shared/data is not present")
    return SHARED


def run_cli(cli, *args, check=True, input=None):
    """Runs ibdkit with args; returns CompletedProcess (text mode unless input is bytes)."""
    return subprocess.run([str(cli), *map(str, args)], check=check, capture_output=True,
                          input=input, text=not isinstance(input, bytes))
