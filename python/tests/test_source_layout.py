"""Source files and functions stay small enough to live in.

Checked in src/, cli/, include/, python/bindings/ and bench/ (`*.cpp`, `*.h`):
- no file has more than MAX_FILE_LINES lines;
- no function body has more than MAX_FUNCTION_LINES lines, counted from the line of its opening
  brace to the line of its closing brace.

A function is found by a brace-matching heuristic, not a C++ parser. Comments, string literals
(raw ones included) and character literals are blanked first (a `'` between hex digits of a number
is a digit separator, not a character literal). Then every `{` is classified by the text since the
previous `;`, `{` or `}`: if that text ends with `)` (optionally followed by `const`, `noexcept`,
`override`, `final`, `mutable` or a trailing return type) and does not start with a control
keyword, the block is a function; blocks nested in a function belong to it (lambdas, loops). Its
limits: a constructor whose member initialiser list uses braces (`m_a{1}, m_b(2) {`) is counted
from the last initialiser; a function-like macro opening a block (`TEST(A, B) {`) counts as a
function, as does a lambda at namespace scope; preprocessor branches are read as if all were
compiled, so a function whose `#if`/`#else` arms each open a brace can be mismatched. The name
reported is the identifier before the head's first `(`.

An exception goes into ALLOWED_FILES or ALLOWED with its reason; an entry that no longer exceeds
its limit fails the test, so the lists only shrink.

Needs no build and no network.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]

SOURCE_DIRS = ("src", "cli", "include", "python/bindings", "bench")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 120

# Exceptions, each with its reason (empty: every file and function is within the limits).
# path: why it is longer than MAX_FILE_LINES.
ALLOWED_FILES: dict = {}
# (path, function name): why it is longer than MAX_FUNCTION_LINES.
ALLOWED: dict = {}

CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|return|try)\b")
FUNCTION_TAIL = re.compile(
    r"\)\s*(?:(?:const|noexcept|override|final|mutable|&|&&)\s*|noexcept\s*\([^()]*\)\s*|->\s*[\w:<>,\s*&]+)*$"
)
NAME = re.compile(r"((?:[A-Za-z_~][\w]*::)*(?:operator\s*[^\s(]+|~?[A-Za-z_]\w*))\s*\(")


def source_files():
    files = []
    for d in SOURCE_DIRS:
        for ext in ("*.cpp", "*.h"):
            files += (ROOT / d).rglob(ext)
    return sorted(files)


def blank_comments_and_literals(text):
    """The text with comments and literals replaced by spaces (newlines kept, so lines still count)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i + 2)
            delim = text[i + 2 : k]
            j = text.find(")" + delim + '"', k)
            j = n if j < 0 else j + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "'" and not is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """A `'` inside a number literal (200'000, 0xffff'ffff)."""
    if i == 0 or i + 1 >= len(text) or not text[i + 1].isalnum():
        return False
    j = i - 1
    while j >= 0 and (text[j].isalnum() or text[j] in "'_"):
        j -= 1
    return j + 1 < i and text[j + 1].isdigit()


def functions(text):
    """(name, first line, lines) of each outermost function body in C++ source `text`."""
    code = blank_comments_and_literals(text)
    found = []
    stack = []  # per open brace: (is_function, line of the brace, name)
    head_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == ";":
            head_start = i + 1
        elif c == "{":
            in_function = any(f for f, _, _ in stack)
            head = " ".join(code[head_start:i].split())
            is_function = False
            name = ""
            if not in_function and FUNCTION_TAIL.search(head) and not CONTROL.match(head):
                is_function = True
                m = NAME.search(re.sub(r"^template\s*<[^{}]*?>\s*", "", head))
                name = m.group(1).split("::")[-1] if m else "?"
            stack.append((is_function, line, name))
            head_start = i + 1
        elif c == "}":
            if stack:
                is_function, start, name = stack.pop()
                if is_function:
                    found.append((name, start, line - start + 1))
            head_start = i + 1
    return found


def test_no_source_file_is_too_long():
    long_files, still_allowed = [], set()
    for f in source_files():
        rel = str(f.relative_to(ROOT))
        n = f.read_text(encoding="utf-8", errors="replace").count("\n")
        if n <= MAX_FILE_LINES:
            continue
        if rel in ALLOWED_FILES:
            still_allowed.add(rel)
        else:
            long_files.append(f"{rel}: {n} lines (limit {MAX_FILE_LINES})")
    assert not long_files, "split these along a real seam:\n" + "\n".join(long_files)
    stale = sorted(set(ALLOWED_FILES) - still_allowed)
    assert not stale, "no longer over the limit; remove from ALLOWED_FILES: " + ", ".join(stale)


def test_no_function_is_too_long():
    too_long, still_allowed = [], set()
    for f in source_files():
        rel = str(f.relative_to(ROOT))
        for name, start, lines in functions(f.read_text(encoding="utf-8", errors="replace")):
            if lines <= MAX_FUNCTION_LINES:
                continue
            if (rel, name) in ALLOWED:
                still_allowed.add((rel, name))
            else:
                too_long.append(f"{rel}:{start}: {name} has {lines} lines (limit {MAX_FUNCTION_LINES})")
    assert not too_long, "shorten these (named steps, not arbitrary cuts):\n" + "\n".join(too_long)
    stale = sorted(set(ALLOWED) - still_allowed)
    assert not stale, "no longer over the limit; remove from ALLOWED: " + ", ".join(f"{p} {n}" for p, n in stale)


def test_the_heuristic_finds_functions():
    sample = """
namespace x {
struct S {
    int F(int a) const noexcept
    {
        auto l = [&](int b) { return b + '{'; };
        if (a) { return l(200'000); }
        return R"({{{)" [0];
    }
};
// void Commented() {
template <typename T>
auto G(T t) -> int
{
    return t;
}
} // namespace x
"""
    found = functions(sample)
    assert [(n, s, l) for n, s, l in found] == [("F", 5, 5), ("G", 14, 3)]
