"""Code comments say what the code does and why, never when: no dated history in them.

A date (2026-11-24) or a pointer to CHANGELOG.md in a comment of src/, include/, cli/, bench/ or
python/bindings/ is history, and history goes to CHANGELOG.md; measured figures go to
docs/benchmarks.md (or the design doc of their area) with machine, command and date, where they can
be replaced when measured again. A cheap check on the comments' text, not a C++ parser.

Needs no build and no network.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]

DIRS = ("src", "include", "cli", "bench", "python/bindings")
COMMENT = re.compile(r"//([^\n]*)|/\*(.*?)\*/", re.S)
HISTORY = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b|CHANGELOG")

# Comments still carrying history, in folders another change is rewriting: (path, text) -> why. An
# entry matches a line of that file containing the text; remove it with the comment.
ALLOWED = {}


def history_in_comments(root, allowed=()):
    found = []
    for d in DIRS:
        for path in sorted((root / d).rglob("*")):
            if path.suffix not in (".h", ".cpp"):
                continue
            rel = path.relative_to(root).as_posix()
            text = path.read_text(errors="replace")
            for m in COMMENT.finditer(text):
                body = m.group(1) if m.group(1) is not None else m.group(2)
                hit = HISTORY.search(body)
                if not hit:
                    continue
                line_no = text.count("\n", 0, m.start()) + 1 + body.count("\n", 0, hit.start())
                line = text.splitlines()[line_no - 1]
                if any(rel == p and t in line for p, t in allowed):
                    continue
                found.append(f"{rel}:{line_no}: {line.strip()}")
    return found


def test_no_code_comment_carries_history():
    found = history_in_comments(ROOT, ALLOWED)
    assert found == [], "dates or CHANGELOG pointers in code comments (history goes to CHANGELOG.md):\n" + "\n".join(found)


def test_the_check_finds_a_dated_comment(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cpp").write_text(
        'int a = 1; // why: Core does so\nconst char* s = "2026-11-24";\n/* measured\n   on 2026-11-24 */\nint b; // see CHANGELOG.md\n'
    )
    assert history_in_comments(tmp_path) == ["src/a.cpp:4: on 2026-11-24 */", "src/a.cpp:5: int b; // see CHANGELOG.md"]
