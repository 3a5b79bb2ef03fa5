"""The public API is the façade docs/api.md names, and it stays small.

docs/api.md's table *The façade* lists the headers a user of the library includes. Every header
installed from include/ is one of them or included by one (a supporting header); none includes a
private header of src/; tests/consumer, the program built against the installed package,
includes only the façade. A user who includes `ibdkit/engine/replay.h` to run a replay reads the
options and the result and the handful of plain types they hold: the headers it pulls in are
counted, not guessed.

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


FACADE_ROW = re.compile(r"^\|\s*`(ibdkit/[^`]+\.h)`\s*\|", re.M)
ANY_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">]+)[">]', re.M)


def facade(markdown):
    """The headers of docs/api.md's table *The façade*."""
    section = re.search(r"^## The façade\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    assert section, "docs/api.md has no '## The façade' section"
    return FACADE_ROW.findall(section.group(1))


def installed(include_dir=INCLUDE):
    return sorted(p.relative_to(include_dir).as_posix() for p in (include_dir / "ibdkit").rglob("*.h"))


def test_every_facade_header_exists():
    names = facade((ROOT / "docs/api.md").read_text())
    assert len(names) == len(set(names)), "docs/api.md lists a header twice"
    assert [n for n in names if not (INCLUDE / n).is_file()] == []


def test_every_installed_header_is_the_facade_or_included_by_it():
    names = facade((ROOT / "docs/api.md").read_text())
    reached = set(names).union(*(pulled_in(n) for n in names))
    stray = [h for h in installed() if h not in reached]
    assert stray == [], (
        "installed headers no façade header needs: move them under src/ (private) or add them to "
        f"docs/api.md's façade: {stray}"
    )


def test_no_installed_header_includes_a_private_one():
    found = []
    for h in installed():
        for kind, name in ANY_INCLUDE.findall((INCLUDE / h).read_text()):
            if kind == '"' or (kind == "<" and name.startswith("ibdkit/") and not (INCLUDE / name).is_file()):
                found.append(f"include/{h} includes {name}")
    assert found == [], "an installed header reaches what is not installed:\n" + "\n".join(found)


def test_the_consumer_includes_only_the_facade():
    names = set(facade((ROOT / "docs/api.md").read_text()))
    used = []
    for path in sorted((ROOT / "tests/consumer").glob("*.cpp")):
        used += [name for kind, name in ANY_INCLUDE.findall(path.read_text()) if name.startswith("ibdkit/") or kind == '"']
    assert used, "tests/consumer includes no ibdkit header"
    assert [n for n in used if n not in names] == [], "tests/consumer reaches past the façade"


def test_a_stray_header_is_found(tmp_path):
    (tmp_path / "ibdkit/a").mkdir(parents=True)
    (tmp_path / "ibdkit/a/front.h").write_text("#include <ibdkit/a/used.h>\n")
    (tmp_path / "ibdkit/a/used.h").write_text("")
    (tmp_path / "ibdkit/a/stray.h").write_text("")
    names = ["ibdkit/a/front.h"]
    reached = set(names).union(*(pulled_in(n, tmp_path) for n in names))
    assert [h for h in installed(tmp_path) if h not in reached] == ["ibdkit/a/stray.h"]


def test_replay_h_pulls_in_at_most_eleven_headers():
    # Two of them are what every run's options share: blockfile/source.h, the run's source (three
    # fields), and settings/run_settings.h, its settings (five).
    found = pulled_in("ibdkit/engine/replay.h")
    assert len(found) <= 11, f"ibdkit/engine/replay.h pulls in {len(found)} headers: {sorted(found)}"


def test_the_count_follows_includes_through_headers(tmp_path):
    (tmp_path / "ibdkit").mkdir()
    (tmp_path / "ibdkit/a.h").write_text("#include <ibdkit/b.h>\n#include <vector>\n")
    (tmp_path / "ibdkit/b.h").write_text("#include <ibdkit/c.h>\n#include <ibdkit/a.h>\n")
    (tmp_path / "ibdkit/c.h").write_text("")
    assert pulled_in("ibdkit/a.h", tmp_path) == {"ibdkit/b.h", "ibdkit/c.h"}


# A function declared at namespace scope: a return type, a name, an opening parenthesis, from the
# first column (bodies and class members are indented; templates' own lines are skipped).
FREE_FUNCTION = re.compile(r"^(?:\[\[nodiscard\]\]\s*)?(?:(?:inline|static|constexpr)\s+)*"
                           r"(?!namespace\b|struct\b|class\b|enum\b|using\b|template\b|return\b|typedef\b)"
                           r"[A-Za-z_][\w:<>,\s*&]*?[\s*&]~?[A-Za-z_]\w*\s*\(")


def undocumented_functions(text):
    """The namespace-scope function declarations of a header with no comment in the lines just
    above them (a comment may stand for the block of declarations it opens: overloads, a group),
    as 'LINE: declaration'."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if not FREE_FUNCTION.match(line):
            continue
        k = i - 1
        while k >= 0 and lines[k].strip() and not lines[k].lstrip().startswith("//"):
            k -= 1
        if k < 0 or not lines[k].lstrip().startswith("//"):
            found.append(f"{i + 1}: {line.strip()}")
    return found


def test_every_function_of_the_facade_says_what_it_does():
    """docs/api.md's contract: each entry point says what it does, what it returns and how it fails,
    in a comment above it (or above the group of overloads it belongs to)."""
    missing = []
    for header in facade((ROOT / "docs/api.md").read_text()):
        missing += [f"include/{header}:{d}" for d in undocumented_functions((INCLUDE / header).read_text())]
    assert not missing, "functions of the façade without a comment:\n" + "\n".join(missing)


def test_the_check_finds_an_undocumented_function():
    text = ("/// Documented.\nint A(int x);\nint B(int x) noexcept;\n\n/// Documented.\n"
            "template <typename T>\nvoid C(T t)\n{\n    D(t);\n}\n\nResult<int> E(std::span<const uint8_t> b);\n")
    assert undocumented_functions(text) == ["12: Result<int> E(std::span<const uint8_t> b);"]


# A class's opening line and its end, both from the first column (forward declarations end in ';').
CLASS_OPEN = re.compile(r"^(?:template\s*<.*>\s*)?(class|struct|union)\s+(?:\[\[\w+\]\]\s*)?\w+[^;]*$")
ACCESS = re.compile(r"^\s*(public|protected|private):\s*$")  # a class's own labels start in the first column
# A member function declared in a class's body: four spaces in, a name and an opening parenthesis.
MEMBER_FUNCTION = re.compile(r"^ {4}(?:\[\[nodiscard\]\]\s*)?(?:(?:static|constexpr|virtual|explicit|inline)\s+)*"
                             r"(?!return\b|using\b|typedef\b|friend\b|template\b|enum\b|struct\b|class\b)"
                             r"(?:[A-Za-z_][\w:<>,\s*&]*?[\s*&])?(?:operator\W+|[A-Za-z_]\w*)\s*\(")


def undocumented_members(text):
    """The public member functions of a header's classes with no comment just above them or above
    the group of declarations they belong to (the group ends at a blank line, an access label or
    the end of a body), as 'LINE: declaration'. Special members that are defaulted or deleted,
    destructors and friends say nothing a reader needs."""
    lines = text.splitlines()
    found, access = [], None
    for i, line in enumerate(lines):
        opened = CLASS_OPEN.match(line)
        if opened:
            access = "public" if opened.group(1) != "class" else "private"
            continue
        if line.startswith("};"):
            access = None
            continue
        if access is None:
            continue
        label = ACCESS.match(line)
        if label and not line.startswith(" "):
            access = label.group(1)
            continue
        if access != "public" or not MEMBER_FUNCTION.match(line):
            continue
        if re.search(r"=\s*(default|delete)\s*;", line) or line.lstrip().startswith("~"):
            continue
        k = i - 1
        while (k >= 0 and lines[k].strip() and not lines[k].lstrip().startswith("//") and not ACCESS.match(lines[k])
               and lines[k].strip() not in ("}", "};") and not lines[k].rstrip().endswith("{")):
            k -= 1
        if k < 0 or not lines[k].lstrip().startswith("//"):
            found.append(f"{i + 1}: {line.strip()}")
    return found


def test_every_public_member_of_the_facade_says_what_it_does():
    """The same contract for the member functions of the façade's classes: what a view's accessor
    reads, what a range's bounds are, what a method may not be called with."""
    missing = []
    for header in facade((ROOT / "docs/api.md").read_text()):
        missing += [f"include/{header}:{d}" for d in undocumented_members((INCLUDE / header).read_text())]
    assert not missing, f"{len(missing)} public member functions of the façade without a comment:\n" + "\n".join(missing)


def test_the_check_finds_an_undocumented_member():
    text = ("class [[nodiscard]] A {\npublic:\n    /// Documented.\n    int B() const;\n    int C() const;\n\n    int D() const;\n"
            "    A() = default;\n    ~A();\n    class It {\n    public:\n        int J();\n    };\n\nprivate:\n    int E();\n};\n\nstruct F {\n    int G();\n};\n"
            "template <typename S>\nvoid H(S& s)\n{\n    I(s);\n}\n")
    assert undocumented_members(text) == ["7: int D() const;", "20: int G();"]
