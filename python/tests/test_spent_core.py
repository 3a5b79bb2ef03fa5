"""Differential: blocks with their spent outputs. On a data directory written by Bitcoin Core's own
engine, the spent outputs ibdkit reads from Core's rev files equal those ibdkit's engine computes
replaying the same blocks, and equal the spent outputs Core's engine itself returns (py-bitcoinkernel's
block_spent_outputs); each transaction's fee is the sum of those input values minus its outputs.
`ibdkit export` writes the tables to CSV, JSON lines and SQLite, re-read here."""
import csv
import json
import shutil
import sqlite3

import pytest

from conftest import import_ibdkit, import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import START, block_hash, core_datadir, framed_records, records, snapshot  # noqa: E402

REGTEST_GENESIS = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"


def core_chain(cli, tmp_path, seed):
    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "120", "--target-mb", "2",
            "--seed", str(seed), "--start-time", str(START), "--no-progress", "--json")
    blocks = records(tmp_path / "chain" / "blocks")
    if blocks and block_hash(blocks[0]) == REGTEST_GENESIS:
        blocks = blocks[1:]  # Core writes its own genesis
    datadir, height, tip, _ = core_datadir(tmp_path, blocks, seed=seed)
    assert height == 120
    return datadir, tmp_path / "chain" / "blocks"


def spent_of(block):
    """Per input after the coinbase, in block order: (value, script_pubkey, height, coinbase)."""
    return [(i.value, i.script_pubkey, i.height, i.coinbase)
            for tx in block.transactions[1:] for i in tx.inputs]


def cores_spent_outputs(datadir):
    """Core's engine's spent outputs per height (heights 1..tip), from the datadir it wrote."""
    net = datadir / "regtest"
    ctx = pbk.make_context(pbk.ChainType.REGTEST)
    opts = pbk.ChainstateManagerOptions(ctx, str(net), str(net / "blocks"))
    opts.set_worker_threads_num(1)
    cm = pbk.ChainstateManager(opts)
    chain = cm.get_active_chain()
    out = {}
    for h in range(1, chain.height + 1):
        undo = cm.block_spent_outputs[chain.block_tree_entries[h]]
        out[h] = [(c.output.amount, bytes(c.output.script_pubkey), c.confirmation_height, c.is_coinbase)
                  for tx in undo.transactions for c in tx.coins]
        del undo
    del chain
    del cm
    return out


def test_spent_outputs_from_cores_rev_files_equal_the_engines_and_cores(cli, tmp_path):
    ibdkit = import_ibdkit()
    datadir, blocks_dir = core_chain(cli, tmp_path, seed=41)
    before = snapshot(datadir)
    from_rev = list(ibdkit.read_blocks(datadir, spent_outputs=True))
    assert snapshot(datadir) == before, "reading spent outputs leaves Core's datadir byte-identical"
    from_engine = list(ibdkit.read_blocks(blocks_dir, network="regtest", spent_outputs=True))
    assert [b.height for b in from_rev] == list(range(0, 121))
    assert [b.hash for b in from_rev] == [b.hash for b in from_engine]
    spends = 0
    for a, b in zip(from_rev, from_engine):
        assert spent_of(a) == spent_of(b), f"spent outputs of block {a.height}"
        assert a.fees == b.fees and a.subsidy == b.subsidy
        assert a.coinbase_value <= a.fees + a.subsidy
        spends += len(spent_of(a))
    assert spends > 200, "the chain spends coins"

    core = cores_spent_outputs(datadir)
    for block in from_rev[1:]:
        assert spent_of(block) == core[block.height], f"block {block.height} against Core's engine"
        values = iter(v for v, _, _, _ in core[block.height])
        for tx in block.transactions[1:]:
            paid = sum(next(values) for _ in tx.inputs)
            assert tx.fee == paid - sum(o.value for o in tx.outputs)
            assert tx.feerate == tx.fee / tx.vsize
        assert block.transactions[0].fee is None and block.transactions[0].feerate is None

    # A range, and the attributes without spent outputs.
    part = list(ibdkit.read_blocks(datadir, spent_outputs=True, from_height=50, to_height=60))
    assert [b.height for b in part] == list(range(50, 61))
    plain = next(iter(ibdkit.read_blocks(blocks_dir, network="regtest", from_height=5)))
    assert plain.height == 5 and not plain.has_spent_outputs
    try:
        plain.fees
    except ibdkit.Error as e:
        assert e.kind == "NoSpentOutputs" and "spent_outputs=True" in str(e)
    else:
        raise AssertionError("Block.fees without spent outputs must raise")


def test_export_tables_to_csv_jsonl_sqlite(cli, tmp_path):
    ibdkit = import_ibdkit()
    datadir, blocks_dir = core_chain(cli, tmp_path, seed=43)
    blocks = list(ibdkit.read_blocks(datadir, spent_outputs=True))
    fees = sum(b.fees for b in blocks)
    txs = sum(len(b.transactions) for b in blocks)
    inputs = sum(len(tx.inputs) for b in blocks for tx in b.transactions[1:])
    outputs = sum(len(tx.outputs) for b in blocks for tx in b.transactions)
    expected = {"blocks": len(blocks), "transactions": txs, "inputs": inputs, "outputs": outputs}
    before = snapshot(datadir)
    for source in (["--datadir", datadir], ["--blocks-dir", blocks_dir]):
        for table, rows in expected.items():
            out = tmp_path / f"{table}.csv"
            r = run_cli(cli, "export", table, *source, "--format", "csv", "--out", out, "--quiet", check=False)
            assert r.returncode == 0, r.stderr
            with open(out, newline="") as f:
                got = list(csv.DictReader(f))
            assert len(got) == rows, (table, source[0])
            if table == "transactions":
                assert sum(int(t["fee"]) for t in got if t["fee"] != "") == fees
                assert sum(1 for t in got if t["fee"] == "") == len(blocks)  # one coinbase each
            if table == "blocks":
                assert [int(b["height"]) for b in got] == list(range(len(blocks)))
                assert sum(int(b["fees"]) for b in got) == fees
    assert snapshot(datadir) == before

    out = tmp_path / "tx.jsonl"
    r = run_cli(cli, "export", "transactions", "--datadir", datadir, "--format", "jsonl", "--out", out, "--quiet",
                "--from", "10", "--to", "99", check=False)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {row["height"] for row in rows} == set(range(10, 100))
    assert sum(row["fee"] or 0 for row in rows) == sum(b.fees for b in blocks[10:100])
    assert all(row["fee"] is None and row["feerate"] is None for row in rows if row["txid"] in
               {b.transactions[0].txid for b in blocks})

    out = tmp_path / "inputs.sqlite"
    r = run_cli(cli, "export", "inputs", "--datadir", datadir, "--format", "sqlite", "--out", out, "--quiet", check=False)
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(out) as db:
        n, total = db.execute("SELECT count(*), sum(value) FROM inputs").fetchone()
    assert n == inputs
    assert total == sum(i.value for b in blocks for tx in b.transactions[1:] for i in tx.inputs)

    # Errors say what to do.
    r = run_cli(cli, "export", "blocks", "--format", "csv", "--out", tmp_path / "x.csv", check=False)
    assert r.returncode != 0 and "--datadir" in r.stderr
    r = run_cli(cli, "export", "blocks", "--datadir", datadir, "--format", "csv", "--out", tmp_path / "x.csv",
                "--to", "500", check=False)
    assert r.returncode != 0 and "tip" in r.stderr
    assert not (tmp_path / "x.csv").exists()


@pytest.fixture(scope="module")
def damaged(cli, tmp_path_factory):
    """Core's datadir of a 120-block chain, and a copy with the last byte of block 100 flipped (a
    transaction's lock time: the header, hence the block index's hash, is unchanged)."""
    ibdkit = import_ibdkit()
    root = tmp_path_factory.mktemp("damaged")
    datadir, _ = core_chain(cli, root, seed=47)
    hash100 = list(ibdkit.read_blocks(datadir, from_height=100, to_height=100))[0].hash
    bad = root / "bad"
    shutil.copytree(datadir, bad)
    blocks_dir = bad / "regtest" / "blocks"
    for name, offset, payload, _ in framed_records(blocks_dir):
        if block_hash(payload) == hash100:
            f = blocks_dir / name
            data = bytearray(f.read_bytes())
            data[offset + len(payload) - 1] ^= 0x01  # xor.dat's obfuscation is linear: one bit either way
            f.write_bytes(bytes(data))
            return datadir, bad
    raise AssertionError("block 100 not found in the blk files")


def test_every_reader_refuses_a_damaged_block_the_same_way(cli, damaged, tmp_path):
    """Regression: `export --datadir` exported a block with a damaged transaction (exit 0, a txid
    that does not exist) while `export --blocks-dir` and `replay` refused it. Every reader now
    checks what it reads as the replay does, and says the same words."""
    ibdkit = import_ibdkit()
    _, bad = damaged
    says = "the block at height 100 breaks a consensus rule: bad-txnmrklroot"
    for source in (["--datadir", bad], ["--blocks-dir", bad / "regtest" / "blocks"]):
        out = tmp_path / "t.csv"
        r = run_cli(cli, "export", "transactions", *source, "--format", "csv", "--out", out, "-q", check=False)
        assert r.returncode == 1 and says in r.stderr, (source[0], r.returncode, r.stderr)
        assert not out.exists()
    r = run_cli(cli, "replay", "-q", "--datadir", bad, check=False)
    assert r.returncode == 2 and "bad-txnmrklroot" in r.stdout + r.stderr, r.stdout
    for where, kw in ((bad, {}), (bad, {"spent_outputs": True}), (bad / "regtest" / "blocks", {"network": "regtest"})):
        with pytest.raises(ibdkit.Error, match=says) as e:
            list(ibdkit.read_blocks(where, **kw))
        assert e.value.kind == "Corrupt"
    assert [b.height for b in ibdkit.read_blocks(bad, to_height=99)] == list(range(100)), "the blocks below it read"


def test_read_blocks_seeks_to_from_height(damaged):
    """Regression: read_blocks(path, from_height=N) read every block from the genesis to skip them.
    It seeks: the damaged block 100 below the range is never read, and the bytes read are those of
    the blocks delivered."""
    ibdkit = import_ibdkit()
    good, bad = damaged
    for where, kw in ((bad, {}), (bad / "regtest" / "blocks", {"network": "regtest"})):
        reader = ibdkit.read_blocks(where, from_height=101, to_height=102, **kw)
        assert len(reader) == 2
        got = list(reader)
        assert [b.height for b in got] == [101, 102]
        assert reader.scan["block_bytes_read"] == sum(b.size for b in got)
    full = ibdkit.read_blocks(good)
    assert len(full) == 121 and [b.height for b in ibdkit.read_blocks(good, from_height=119)] == [119, 120]
