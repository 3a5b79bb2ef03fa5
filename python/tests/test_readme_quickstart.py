"""The README is tested: the `console` example of its quick start runs as written, on the data it
names (tests/data), and prints what the README shows. Three substitutions only: `ibdkit` is the
binary under test, `tests/data/` is IBDKIT_TEST_DATA, and `/tmp/` is a fresh directory (so that a
run neither reads nor clobbers another's /tmp/cs). The commands run in that directory, one shell.
Figures that differ from run to run (time, speed, memory) are compared as numbers of any value on
the lines that carry them; `…` in the README elides part of a line."""
import pathlib
import re
import subprocess

import pytest

from conftest import DATA
from doc_examples import blocks_run_by

VOLATILE = ("blocks connected", "memory")  # lines with timings, speeds and RSS


def console_examples():
    """[(command, [expected output lines])] of the README's ```console block marked as run by this
    file (python/tests/doc_examples.py)."""
    blocks = blocks_run_by("python/tests/test_readme_quickstart.py", "README.md")
    assert [b.lang for b in blocks] == ["console"], "README.md has no ```console example marked for this test"
    steps = []
    for line in blocks[0].code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before the first command: {line!r}"
            steps[-1][1].append(line)
    return steps


def line_pattern(expected):
    """A regex for one line of output as the README shows it."""
    parts = [re.escape(p) for p in expected.split("…")]
    if expected.startswith(VOLATILE):
        parts = [re.sub(r"\d+(?:\\\.\d+)?", r"[0-9]+(?:\\.[0-9]+)?", p) for p in parts]
    return "".join(p if i == 0 else ".+?" + p for i, p in enumerate(parts)) + r"\Z"


def test_line_pattern_keeps_what_is_fixed():
    assert re.match(line_pattern("height             120"), "height             120")
    assert not re.match(line_pattern("height             120"), "height             121")
    assert re.match(line_pattern("memory             peak RSS 7 MiB; 0 coins"), "memory             peak RSS 12 MiB; 0 coins")
    assert re.match(line_pattern("x,0,8,1,5000,pubkey,,2102…bcac"), "x,0,8,1,5000,pubkey,,2102abcdefbcac")
    assert not re.match(line_pattern("x,0,8…bcac"), "x,0,9abcac")


def test_readme_quickstart_runs_as_written(cli, shared, tmp_path):
    steps = console_examples()
    assert len(steps) >= 2 and any("replay" in c for c, _ in steps)
    env_path = f"{pathlib.Path(cli).resolve().parent}:/usr/bin:/bin"
    for command, expected in steps:
        run = command.replace("/tmp/", f"{tmp_path}/").replace("tests/data/", f"{DATA}/")
        r = subprocess.run(["bash", "-o", "pipefail", "-c", run], cwd=tmp_path, capture_output=True, text=True,
                           env={"PATH": env_path, "HOME": str(tmp_path), "LC_ALL": "C.UTF-8"})
        assert r.returncode == 0, f"README command failed: {command}\n{r.stderr}"
        got = r.stdout.splitlines()
        assert len(got) == len(expected), f"{command}: README shows {len(expected)} lines, got:\n{r.stdout}"
        for want, line in zip(expected, got):
            assert re.match(line_pattern(want), line), f"{command}:\n README: {want}\n output: {line}"
