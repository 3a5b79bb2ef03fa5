"""The CLI answers --help and rejects unknown policies with a message that says what to do."""
from conftest import run_cli


def test_help(cli):
    out = run_cli(cli, "--help").stdout
    assert "bench" in out and "run" in out


def test_unknown_policy_is_explained(cli):
    r = run_cli(cli, "bench", "--policy", "nope", "--list", check=False)
    assert r.returncode != 0
    assert "unknown policy 'nope'" in r.stderr
