"""No code decides by searching a reason's words: a verdict carries a typed kind.

A verdict's or a block failure's `reason` is for people (Core's reject reason, or a sentence); what
a caller decides on (the exit code, which peer lied, whether the hints are another chain's) is
the verdict's `kind` (`swiftsync::VerdictKind`, include/ibdkit/swiftsync/check_range.h). Searching
the words (`reason.find("aggregate")`) breaks silently the day a message is reworded. This test
reads every source file of the library, the CLI and the Python module and fails on a search in a
string named as a reason (`reason.find(`, `Reason().rfind(`, `reason.starts_with(`, ...).

Needs no build and no network.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKED = ("include", "src", "cli", "python/bindings")
SEARCH = re.compile(r"\breason\w*(?:\(\))?\s*(?:\.|->)\s*(?:r?find\w*|starts_with|ends_with|contains|compare)\s*\(", re.I)


def searches(root=ROOT):
    found = []
    for folder in CHECKED:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cpp"):
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if SEARCH.search(line):
                    found.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    return found


def test_no_code_searches_a_reasons_words():
    found = searches()
    assert not found, ("decide on the verdict's kind (swiftsync::VerdictKind), not on a reason's words:\n" + "\n".join(found))


def test_the_search_is_found_where_it_is(tmp_path):
    """The check can fail: the two searches it was written against are found."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cpp").write_text('if (out.run.verdict.reason.find("aggregate") != std::string::npos) {}\n'
                                           'if (res.verdict.Reason().rfind("block ", 0) != 0) {}\n'
                                           'auto it = m_ready.find(seq);\n')
    assert [f.split(":")[1] for f in searches(tmp_path)] == ["1", "2"]
