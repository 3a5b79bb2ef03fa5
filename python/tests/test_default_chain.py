"""The default chain (`make run`'s, DefaultChainOptions) is the size README.md, docs/benchmarks.md and
docs/generator.md give."""
import re
import subprocess

from conftest import ROOT


def test_default_chain_is_the_size_the_readme_says(cli, tmp_path):
    """`make run`'s chain (DefaultChainOptions: mainnet profile, seed 1, 333,000 bytes a block aimed at,
    the start time one spacing after regtest's genesis), generated as `gen-chain` can."""
    said = {name: re.search(pattern, (ROOT / name).read_text())
            for name, pattern in (("README.md", r"\(120 blocks, ~(\d+) MB"),
                                  ("docs/benchmarks.md", r"120 mainnet-shaped blocks, ~(\d+) MB"),
                                  ("docs/generator.md", r"so the chain is ~(\d+) MB"))}
    assert all(said.values()), said
    subprocess.run([cli, "gen-chain", "--out", tmp_path / "c", "--profile", "mainnet", "--blocks", "120", "--seed", "1",
                    "--target-mb", "39.96", "--start-time", str(1296688602 + 600), "--no-progress"], check=True,
                   capture_output=True)
    size = sum(p.stat().st_size for p in (tmp_path / "c" / "blocks").iterdir())
    for name, m in said.items():
        assert abs(size / 1e6 - int(m[1])) <= 0.1 * int(m[1]), f"{name} says ~{m[1]} MB, the chain is {size / 1e6:.1f} MB"
