"""A reader and a second writer beside an ibdkit writer (issue: `utxo dump` of a chainstate another
ibdkit was writing said "bitcoind is running" and wrote mainnet addresses for a regtest chainstate;
a second writer got LevelDB's raw lock text). Here this process is the writer: the checks run from
its progress callback, while the engine holds the chainstate open between two flushes."""
import csv
import io

import ibdkit_cli


def test_a_reader_and_a_second_writer_beside_an_ibdkit_writer(ibdkit, cli, chain, tmp_path):
    cs = tmp_path / "cs"
    seen = {}

    def during(p):
        if seen or p["height"] < 20:
            return
        out = tmp_path / "live.csv"
        seen["dump"] = ibdkit_cli.run_cli(cli, "utxo", "dump", "--chainstate", cs, "--format", "csv", "--out", out,
                                          check=False)
        seen["csv"] = out.read_text() if out.exists() else ""
        seen["writer"] = ibdkit_cli.run_cli(cli, "replay", "-q", "--blocks-dir", chain, "--chainstate", cs, check=False)

    r = ibdkit.replay(chain, chainstate=cs, dbcache=0, progress=during, statistics=False)
    assert r["height"] == 150 and seen, "the checks ran while this process wrote the chainstate"

    dump = seen["dump"]
    assert dump.returncode == 0, dump.stderr
    assert "another ibdkit is writing this chainstate: reading a snapshot of it" in dump.stderr, dump.stderr
    assert "bitcoind" not in dump.stderr and "addresses are mainnet's" not in dump.stderr, dump.stderr
    addresses = [row["address"] for row in csv.DictReader(io.StringIO(seen["csv"])) if row["address"]]
    assert any(a.startswith("bcrt1") for a in addresses), "regtest addresses, from the chainstate's marker"
    assert not any(a.startswith("bc1") for a in addresses), addresses[:5]

    writer = seen["writer"]
    assert writer.returncode == 1, writer.stderr
    assert writer.stderr.startswith("ibdkit: error: another ibdkit is writing the chainstate " + str(cs)), writer.stderr
    assert "already held" not in writer.stderr and "IO error" not in writer.stderr, writer.stderr
