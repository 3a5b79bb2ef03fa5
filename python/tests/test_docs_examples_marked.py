"""Every example in README.md and docs/*.md is run by a test or says why not: each ```python, ```sh,
```console, ```cpp block carries a marker (python/tests/doc_examples.py) naming the test that runs
it as written, which selects it by that marker, or `illustrative: WHY`. Blocks that are not examples
(synopses, diagrams) are tagged with a language all the same, so none slips through untagged."""
from conftest import ROOT
from doc_examples import EXAMPLE_LANGUAGES, MARKER, all_blocks, fenced_blocks


def test_the_parser_reads_markers_and_indented_blocks(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("<!-- example: run by a/b.py -->\n```sh\necho 1\n```\n- item\n\n"
                   "  <!-- example: illustrative: needs ~/.bitcoin -->\n  ```python\n  if x:\n      y\n  ```\n"
                   "```python\nz\n```\n")
    a, b, c = fenced_blocks(doc)
    assert (a.lang, a.code, a.runner, a.marked) == ("sh", "echo 1\n", "a/b.py", True)
    assert (b.lang, b.code, b.runner, b.why) == ("python", "if x:\n    y\n", None, "needs ~/.bitcoin")
    assert (c.marked, c.line) == (False, 12)


def test_every_block_has_a_language():
    untagged = [b.where() for b in all_blocks() if not b.lang]
    assert not untagged, f"fenced blocks without a language (```text for a synopsis or a diagram): {untagged}"


def test_every_example_is_run_or_marked_illustrative():
    examples = [b for b in all_blocks() if b.lang in EXAMPLE_LANGUAGES]
    assert len(examples) >= 20
    unmarked = [b.where() for b in examples if not b.marked]
    assert not unmarked, ("examples neither run by a test nor marked illustrative "
                          f"(`<!-- example: run by TEST -->` or `<!-- example: illustrative: WHY -->`): {unmarked}")
    for b in examples:
        if b.runner:
            runner = ROOT / b.runner
            assert runner.is_file(), f"{b.where()}: no runner {b.runner}"
            assert b.runner in runner.read_text(), f"{b.where()}: {b.runner} does not select its blocks by its marker"
    assert sum(1 for b in examples if b.runner) >= 9


def test_no_marker_without_an_example():
    for doc in {b.doc for b in all_blocks()}:
        lines = doc.read_text().splitlines()
        for i, line in enumerate(lines):
            if "<!-- example:" in line:
                assert MARKER.fullmatch(line.strip()), f"{doc.name}:{i + 1}: malformed marker {line!r}"
                assert i + 1 < len(lines) and lines[i + 1].strip().startswith("```"), f"{doc.name}:{i + 1}: no block follows"
                assert lines[i + 1].strip()[3:] in EXAMPLE_LANGUAGES, f"{doc.name}:{i + 1}: a marker on a non-example"

