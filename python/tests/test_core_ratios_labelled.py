"""Every figure that compares ibdkit with Bitcoin Core says what both sides did.

A ratio against Core is like for like only when both sides did the same work: both verified every
script, both skipped them, or both ran the same job (a decode, CheckBlock, the same inputs'
checks). In README.md and docs/benchmarks.md, every unit of text — a paragraph, a list item, or a
table row read with its table's header and the paragraph above the table — that names Core and
gives a ratio (`3.1×`) must carry one of LABELS (Core named only as where data came from, a
Core datadir or its rev files, does not count), unless it is a comparison of buffer policies
(it names `plain`, the policies' baseline). And "not like for like" may no longer appear there:
such rows were replaced by like-for-like ones (docs/core-allocators.md, docs/benchmarks.md §4).

Needs no build and no network; a failure lists `file:line: text`.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILES = ("README.md", "docs/benchmarks.md")

RATIO_RE = re.compile(r"\d(?:[.,]\d+)?×")
CORE_RE = re.compile(r"\bCore\b")
LABELS = re.compile(r"both sides|either side|both verif|both skip|same job|same inputs|same checks|"
                    r"same coins|same libsecp256k1 calls", re.IGNORECASE)
# Core named as where data came from, not as the other side of a comparison.
CORE_AS_SOURCE = re.compile(r"Core datadir|Core's (?:rev|blk|index) files|Core's address encodings")
POLICY_BASELINE = re.compile(r"\bplain\b")


def units(path):
    """(first line number, text to test, text that may carry the label) per unit of a Markdown file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    caption = ""
    header = None
    para, para_start = [], 0
    fenced = False

    def flush():
        nonlocal para
        if para:
            out.append((para_start, " ".join(para), " ".join(para)))
        para = []

    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("|"):
            if para:
                caption = " ".join(para)
                flush()
            if header is None:
                header = line
            elif not re.match(r"^\|[\s:|-]+\|$", line):
                out.append((n, header + " " + line, caption + " " + header + " " + line))
            continue
        header = None
        if not line.strip() or line.startswith("#"):
            flush()
            if line.startswith("#"):
                caption = ""
            continue
        if re.match(r"^\s*(?:[-*]|\d+\.)\s", line):
            flush()
        if not para:
            para_start = n
        para.append(line.strip())
    flush()
    return out


def test_every_ratio_against_core_says_what_both_sides_did():
    problems = []
    for rel in FILES:
        for n, text, context in units(ROOT / rel):
            if not (CORE_RE.search(CORE_AS_SOURCE.sub("", text)) and RATIO_RE.search(text)):
                continue
            if POLICY_BASELINE.search(text) or LABELS.search(context):
                continue
            problems.append(f"{rel}:{n}: {text[:160]}")
    assert not problems, "\nratios against Core without what both sides did:\n" + "\n".join(problems)


def test_no_comparison_is_left_not_like_for_like():
    found = []
    for rel in FILES:
        for n, line in enumerate((ROOT / rel).read_text(encoding="utf-8").splitlines(), 1):
            if "not like for like" in line.lower():
                found.append(f"{rel}:{n}: {line.strip()[:160]}")
    assert not found, "\n" + "\n".join(found)
