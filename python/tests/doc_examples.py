"""The examples in the documentation: every fenced block of README.md and docs/*.md, with the marker
on the line before it that says who runs it. Each example (a block in one of EXAMPLE_LANGUAGES) is
preceded by one of

    <!-- example: run by python/tests/test_X.py -->    a test runs it as written
    <!-- example: illustrative: WHY -->               not run, and why (a mainnet datadir, PyPI, ...)

A runner takes its blocks with `blocks_run_by(itself)`, so the marker is what selects them;
python/tests/test_docs_examples_marked.py fails on an example without a marker, on a block without
a language, and on a runner that does not exist."""
import dataclasses
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLE_LANGUAGES = {"python", "sh", "console", "bash", "shell", "cpp"}
MARKER = re.compile(r"<!-- example: (?:run by (?P<runner>\S+)|illustrative: (?P<why>\S.*?)) -->")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\S*)\s*$")


@dataclasses.dataclass
class Block:
    doc: pathlib.Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str  # without the block's indentation
    runner: str | None  # the marker's runner, None if illustrative or unmarked
    why: str | None  # the marker's reason for an illustrative example
    marked: bool

    def where(self):
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def fenced_blocks(doc):
    """Every fenced block of one Markdown file, in order."""
    lines = doc.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, start = len(m["indent"]), i
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        code = "".join(line[indent:] + "\n" for line in lines[start + 1:end])
        marker = MARKER.fullmatch(lines[start - 1].strip()) if start else None
        blocks.append(Block(doc, start + 1, m["lang"], code, marker and marker["runner"], marker and marker["why"],
                            marker is not None))
        i = end + 1
    return blocks


def all_blocks():
    return [b for doc in DOCS for b in fenced_blocks(doc)]


def blocks_run_by(runner, doc=None):
    """The blocks whose marker names runner (a path from the repository's root), in order."""
    return [b for b in all_blocks() if b.runner == runner and (doc is None or b.doc.name == doc)]
