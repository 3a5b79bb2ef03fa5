"""The examples that open docs/python.md run as written, on a generated chain laid out as they say
(`chain/blocks`, `cs` in the working directory)."""
import re

from conftest import ROOT

DOC = ROOT / "docs" / "python.md"


def example_blocks():
    """The ```python blocks of docs/python.md's first section, "## Examples"."""
    text = DOC.read_text()
    start = text.index("\n## Examples\n")
    end = text.index("\n## ", start + 1)
    return re.findall(r"^```python\n(.*?)^```$", text[start:end], flags=re.S | re.M)


def test_python_md_opens_with_examples():
    first = next(line for line in DOC.read_text().splitlines() if line.startswith("## "))
    assert first == "## Examples"
    assert len(example_blocks()) >= 4


def test_examples_run(ibdkit, chain, need_pyarrow, tmp_path, monkeypatch, capsys):
    (tmp_path / "chain").symlink_to(chain.parent, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for i, block in enumerate(example_blocks()):
        exec(compile(block, f"docs/python.md example {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "NotFound" in out and "dbcache must be in 0..1048576, got -5" in out
    assert "holds files and is not a chainstate" in out, "the refusal, not another error"
    assert namespace["stats"]["height"] == 150 and (tmp_path / "cs" / "IBDKIT_CHAINSTATE").exists()
    assert sorted(p.name for p in chain.parent.iterdir()) == ["blocks", "chain.json"], "nothing written beside the chain"
