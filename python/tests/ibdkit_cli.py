"""The ibdkit binary under test, for both Python suites (python/tests and python/package_tests).

Not a test module; the package tests' conftest.py finds it through sys.path.
"""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cli_path():
    """Path of the ibdkit binary under test (IBDKIT_CLI, else build/release/ibdkit); fails if absent."""
    path = pathlib.Path(os.environ.get("IBDKIT_CLI", ROOT / "build" / "release" / "ibdkit"))
    if not path.exists():
        pytest.fail(f"ibdkit binary not found at {path}; build first (make build)")
    return path


def run_cli(cli, *args, check=True, input=None, cwd=None):
    """Runs ibdkit with args; returns CompletedProcess (text mode unless input is bytes). Under the asan
    preset LD_PRELOAD holds the sanitizer runtime for the interpreter: the CLI links its own."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([str(cli), *map(str, args)], check=check, capture_output=True, input=input,
                          text=not isinstance(input, bytes), env=env, cwd=cwd)
