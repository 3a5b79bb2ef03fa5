"""The documentation points at files that exist, and stays short where it promises to.

Checked in README.md, HACKING.md, CHANGELOG.md, docs/**/*.md and the comments of
include/ibdkit/**/*.h:
- every relative Markdown link `[text](target)` (outside code blocks) resolves from the file's own
  directory (web links and `#anchors` are not checked);
- every file reference resolves from the repository's root: a path that starts with one of the
  repository's top-level directories (`docs/x.md`, `src/...`, `include/ibdkit/...`, `scripts/...`,
  `tests/...`, `python/...`, `cli/...`, `bench/...`, `cmake/...`, `contrib/...`), with or without backticks.
  Patterns (`*`, `<area>`, `{h,cpp}`, `…`) are not paths and are skipped. Another project's path
  is written with its project in front (`bitcoin/src/validation.cpp`), which this check skips.
And README.md has at most 160 lines, docs/benchmarks.md at most 300; no README.md line is longer
than 200 characters and no cell of a README.md table longer than 120: a reader takes the front page
in at a glance, and what does not fit goes into docs/ (the full tables: docs/benchmarks.md, docs/cli.md).

Needs no build and no network; a failure lists `file:line: missing path`.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]

TOP_DIRS = ("docs", "src", "include", "scripts", "tests", "python", "cli", "bench", "cmake", "contrib")
LIMITS = {"README.md": 160, "docs/benchmarks.md": 300}
README_LINE_CHARS = 200
README_CELL_CHARS = 120

# A path that starts with a top-level directory; not preceded by a character that would make it
# the tail of a longer path or word (/tmp/x/src/..., bitcoin/src/..., my_docs/...).
PATH_RE = re.compile(r"(?<![\w./~-])((?:%s)/[\w./+-]*)" % "|".join(TOP_DIRS))
LINK_RE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
PATTERN_CHARS = set("*?<>{}[]$…")


def doc_files():
    files = [ROOT / "README.md", ROOT / "HACKING.md", ROOT / "CHANGELOG.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    return [f for f in files if f.exists()]


def header_files():
    return sorted((ROOT / "include" / "ibdkit").rglob("*.h"))


def markdown_lines(path):
    """(line number, text) of a Markdown file, with fenced code blocks marked."""
    fenced = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            yield n, line, True
            continue
        yield n, line, fenced


def comment_lines(path):
    """(line number, comment text) of a C++ header: // comments and /* */ blocks."""
    in_block = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if in_block:
            end = line.find("*/")
            yield n, line if end < 0 else line[:end]
            in_block = end < 0
            continue
        i = line.find("//")
        j = line.find("/*")
        if i >= 0 and (j < 0 or i < j):
            yield n, line[i + 2:]
        elif j >= 0:
            end = line.find("*/", j + 2)
            yield n, line[j + 2:] if end < 0 else line[j + 2:end]
            in_block = end < 0


def path_refs(text):
    """Repository paths named in a piece of text."""
    for m in PATH_RE.finditer(text):
        p = m.group(1).rstrip(".,;:")
        if "/" not in p.rstrip("/") or any(c in PATTERN_CHARS for c in p):
            continue
        # A pattern follows directly after the match ("src/gen/keys.{h,cpp}", "cmd_<name>.cpp").
        after = text[m.end():m.end() + 1]
        if after and after in PATTERN_CHARS:
            continue
        yield p


def missing_in(path, lines, check_links):
    rel_file = path.relative_to(ROOT)
    out = []
    for n, text, *code in lines:
        in_code = bool(code and code[0])
        if check_links and not in_code:
            for m in LINK_RE.finditer(text):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                target = target.split("#", 1)[0]
                if target and not (path.parent / target).exists():
                    out.append(f"{rel_file}:{n}: missing link target {target}")
        for p in path_refs(text):
            if not (ROOT / p).exists():
                out.append(f"{rel_file}:{n}: missing path {p}")
    return out


def test_markdown_links_and_paths_resolve():
    problems = []
    for f in doc_files():
        problems += missing_in(f, markdown_lines(f), check_links=True)
    assert not problems, "\n" + "\n".join(problems)


def test_header_comments_name_existing_files():
    problems = []
    for f in header_files():
        problems += missing_in(f, comment_lines(f), check_links=False)
    assert not problems, "\n" + "\n".join(problems)


def test_readme_and_benchmarks_stay_short():
    too_long = []
    for rel, limit in LIMITS.items():
        # A reader sees no example marker (python/tests/doc_examples.py): they are not counted.
        n = sum(1 for line in (ROOT / rel).read_text(encoding="utf-8").splitlines()
                if not line.strip().startswith("<!-- example:"))
        if n > limit:
            too_long.append(f"{rel}: {n} lines, at most {limit}")
    assert not too_long, "\n" + "\n".join(too_long)


def table_cells(line):
    """The cells of a Markdown table row (`\\|` inside a cell is no separator)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def test_table_cells_split_on_unescaped_bars():
    assert table_cells("| `a\\|b` | c |") == ["`a\\|b`", "c"]


def test_readme_lines_and_table_cells_stay_short():
    too_long = []
    for n, line, fenced in markdown_lines(ROOT / "README.md"):
        if len(line) > README_LINE_CHARS:
            too_long.append(f"README.md:{n}: a line of {len(line)} characters")
        if not fenced and line.startswith("|"):
            too_long += [f"README.md:{n}: a table cell of {len(c)} characters: {c[:60]}…"
                         for c in table_cells(line) if len(c) > README_CELL_CHARS]
    assert not too_long, (f"\nREADME.md keeps lines within {README_LINE_CHARS} characters and table cells within "
                          f"{README_CELL_CHARS}; move the detail into docs/ and link it:\n" + "\n".join(too_long))
