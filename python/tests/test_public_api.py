"""The public API stays small: what a header of it pulls in is counted, not guessed.

A user who includes `ibdkit/engine/replay.h` to run a replay reads the options and the result, and
the handful of plain types they hold; every header that it pulls in is one more to read and one
more whose change rebuilds the user's code. This test follows `#include <ibdkit/...>` through
include/ and fails when the count grows past its bound.

Needs no build and no network.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "include"
IBDKIT_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*<(ibdkit/[^>]+)>', re.M)


def pulled_in(header, include_dir=INCLUDE):
    """Every ibdkit header `header` includes, directly or through others (itself not counted)."""
    seen, todo = set(), [header]
    while todo:
        text = (include_dir / todo.pop()).read_text()
        for name in IBDKIT_INCLUDE.findall(text):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    seen.discard(header)
    return seen


def test_replay_h_pulls_in_fewer_than_ten_headers():
    found = pulled_in("ibdkit/engine/replay.h")
    assert len(found) < 10, f"ibdkit/engine/replay.h pulls in {len(found)} headers: {sorted(found)}"


def test_the_count_follows_includes_through_headers(tmp_path):
    (tmp_path / "ibdkit").mkdir()
    (tmp_path / "ibdkit/a.h").write_text("#include <ibdkit/b.h>\n#include <vector>\n")
    (tmp_path / "ibdkit/b.h").write_text("#include <ibdkit/c.h>\n#include <ibdkit/a.h>\n")
    (tmp_path / "ibdkit/c.h").write_text("")
    assert pulled_in("ibdkit/a.h", tmp_path) == {"ibdkit/b.h", "ibdkit/c.h"}
