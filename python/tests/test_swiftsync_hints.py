"""Differential: `ibdkit hints` (SwiftSync hintsfiles, BIP 456) built from a chainstate that Bitcoin
Core's engine wrote (its datadir, read-only) and from ibdkit's own replay of the same chain (its
chainstate, and an assumeutxo snapshot of it) are byte-identical, and equal to the hints computed
here, independently, from the blocks and UTXO set as Core's engine reports them."""
import json

from conftest import import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import START, block_hash, records, snapshot  # noqa: E402


def compact_size(n):
    if n < 0xFD:
        return bytes([n])
    if n <= 0xFFFF:
        return b"\xfd" + n.to_bytes(2, "little")
    if n <= 0xFFFFFFFF:
        return b"\xfe" + n.to_bytes(4, "little")
    return b"\xff" + n.to_bytes(8, "little")


def pack_bits(bits):
    """Bits into bytes, most significant bit first, zero-padded."""
    out = bytearray((len(bits) + 7) // 8)
    for i, b in enumerate(bits):
        if b:
            out[i // 8] |= 0x80 >> (i % 8)
    return bytes(out)


def elias_fano(indices):
    """BIP 456's Elias-Fano list, written from the BIP's text."""
    n = len(indices)
    if n == 0:
        return b"\x00"
    m = indices[-1]
    low = ((m + 1) // n).bit_length() - 1
    low_bits = [(v >> b) & 1 for v in indices for b in range(low)]
    high_bits, prev = [], 0
    for v in indices:
        high_bits += [0] * ((v >> low) - prev) + [1]
        prev = v >> low
    return compact_size(n) + compact_size(m) + pack_bits(low_bits) + pack_bits(high_bits)


def core_datadir_and_hints(tmp_path, blocks):
    """Core's engine builds DATADIR/regtest from `blocks`; returns (datadir, height, expected
    hintsfile bytes), the hints computed from the blocks and coins Core's engine reports."""
    datadir = tmp_path / "core"
    net = datadir / "regtest"
    ctx = pbk.make_context(pbk.ChainType.REGTEST)
    opts = pbk.ChainstateManagerOptions(ctx, str(net), str(net / "blocks"))
    opts.set_worker_threads_num(1)
    cm = pbk.ChainstateManager(opts)
    for raw in blocks:
        cm.process_block(pbk.Block(raw))
    chain = cm.get_active_chain()
    height = chain.height
    created = {}  # height -> spendable outpoints in block order
    utxo = set()
    for h in range(1, height + 1):
        block = cm.blocks[chain.block_tree_entries[h]]
        outs = []
        for i, tx in enumerate(block.transactions):
            txid = bytes(tx.txid)
            if i > 0:
                for txin in tx.inputs:
                    op = txin.out_point
                    utxo.discard((bytes(op.txid), op.index))
            for n, out in enumerate(tx.outputs):
                script = bytes(out.script_pubkey)
                if (script and script[0] == 0x6A) or len(script) > 10000:
                    continue
                outs.append((txid, n))
                utxo.add((txid, n))
        created[h] = outs
        del block
    del chain
    del cm  # flushes and closes: the datadir is complete and unlocked
    body = b"".join(elias_fano([i for i, op in enumerate(created[h]) if op in utxo]) for h in range(1, height + 1))
    return datadir, height, b"UTXO\x00" + height.to_bytes(4, "little") + body, len(utxo)


def test_hints_from_cores_chainstate_equal_ibdkits(cli, tmp_path):
    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "140", "--target-mb", "2", "--seed", "31",
            "--start-time", str(START), "--no-progress", "--json")
    bdir = tmp_path / "chain" / "blocks"
    blocks = records(bdir)
    if blocks and block_hash(blocks[0]) == "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206":
        blocks = blocks[1:]  # Core writes its own genesis
    datadir, height, expected, coins = core_datadir_and_hints(tmp_path, blocks)
    assert height == 140 and coins > 140, "the chain spends and keeps coins"

    before = snapshot(datadir)
    core = json.loads(run_cli(cli, "hints", "--json", "--datadir", datadir, "--out", tmp_path / "core.hints").stdout)
    assert snapshot(datadir) == before, "the data directory is byte-identical, with no new file"
    assert (core["height"], core["coins"]) == (height, coins)

    cs = tmp_path / "ours"
    run_cli(cli, "replay", "-q", "--blocks-dir", bdir, "--chainstate", cs)
    ours = json.loads(run_cli(cli, "hints", "--json", "--chainstate", cs, "--blocks-dir", bdir,
                              "--out", tmp_path / "ours.hints", "--threads", "2").stdout)
    assert ours["tip"] == core["tip"]
    run_cli(cli, "utxo", "snapshot", "--chainstate", cs, "--network", "regtest", "--out", tmp_path / "utxo.dat",
            "--no-progress")
    run_cli(cli, "hints", "-q", "--snapshot", tmp_path / "utxo.dat", "--blocks-dir", bdir, "--out", tmp_path / "snap.hints")

    got = (tmp_path / "core.hints").read_bytes()
    assert got == expected, "ibdkit's hints from Core's chainstate equal the hints computed from Core's engine"
    assert (tmp_path / "ours.hints").read_bytes() == got
    assert (tmp_path / "snap.hints").read_bytes() == got
    assert not list(tmp_path.glob("*.partial*"))


def test_hints_cli_errors(cli, tmp_path):
    r = run_cli(cli, "hints", "--out", tmp_path / "x.hints", check=False)
    assert r.returncode != 0
    r = run_cli(cli, "hints", "--blocks-dir", tmp_path, "--chainstate", tmp_path, "--snapshot", tmp_path / "s",
                "--out", tmp_path / "x.hints", check=False)
    assert r.returncode != 0
    r = run_cli(cli, "hints", "--blocks-dir", tmp_path, "--chainstate", tmp_path, "--out", tmp_path / "x.hints", check=False)
    assert r.returncode != 0 and "ibdkit: hints:" in r.stderr
    assert not (tmp_path / "x.hints").exists()
