"""Differential: `ibdkit hints` (SwiftSync hintsfiles, BIP 456) built from a chainstate that Bitcoin
Core's engine wrote (its datadir, read-only) and from ibdkit's own replay of the same chain (its
chainstate, and an assumeutxo snapshot of it) are byte-identical, and equal to the hints computed
here, independently, from the blocks and UTXO set as Core's engine reports them."""
import json

from conftest import import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import START, block_hash, framed_records, records, snapshot  # noqa: E402


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
    lists = [[i for i, op in enumerate(created[h]) if op in utxo] for h in range(1, height + 1)]
    return datadir, height, hintsfile(lists), len(utxo), [len(created[h]) for h in range(1, height + 1)]


def hintsfile(lists):
    """A hintsfile for heights 1..len(lists)."""
    return b"UTXO\x00" + len(lists).to_bytes(4, "little") + b"".join(elias_fano(lst) for lst in lists)


def test_hints_from_cores_chainstate_equal_ibdkits(cli, tmp_path):
    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "140", "--target-mb", "2", "--seed", "31",
            "--start-time", str(START), "--no-progress", "--json")
    bdir = tmp_path / "chain" / "blocks"
    blocks = records(bdir)
    if blocks and block_hash(blocks[0]) == "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206":
        blocks = blocks[1:]  # Core writes its own genesis
    datadir, height, expected, coins, _ = core_datadir_and_hints(tmp_path, blocks)
    assert height == 140 and coins > 140, "the chain spends and keeps coins"

    before = snapshot(datadir)
    core = json.loads(run_cli(cli, "hints", "--json", "--datadir", datadir, "--out", tmp_path / "core.hints").stdout)
    # The end of a replay: of Core's datadir into a temporary chainstate, and of the blocks into ours.
    wrote = json.loads(run_cli(cli, "replay", "--json", "--datadir", datadir, "--threads", "2",
                               "--write-hints", tmp_path / "replay.hints").stdout)
    assert snapshot(datadir) == before, "the data directory is byte-identical, with no new file"
    assert (core["height"], core["coins"]) == (height, coins)
    assert (wrote["height"], wrote["hints"]["height"], wrote["hints"]["coins"]) == (height, height, coins)

    cs = tmp_path / "ours"
    run_cli(cli, "replay", "-q", "--blocks-dir", bdir, "--chainstate", cs, "--write-hints", tmp_path / "replay2.hints")
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
    assert (tmp_path / "replay.hints").read_bytes() == got, "replay --write-hints over Core's datadir"
    assert (tmp_path / "replay2.hints").read_bytes() == got, "replay --write-hints over the blocks"
    assert not list(tmp_path.glob("*.partial*"))

    # Stopped early, the hints are for the height reached; over a datadir as over the blocks.
    r = json.loads(run_cli(cli, "replay", "--json", "--datadir", datadir, "--stop-height", "100",
                           "--write-hints", tmp_path / "h100.hints").stdout)
    assert r["hints"]["height"] == 100
    assert (tmp_path / "h100.hints").read_bytes()[5:9] == (100).to_bytes(4, "little")


def test_swiftsync_accepts_cores_chain_and_refuses_a_wrong_hint(cli, tmp_path):
    """`ibdkit swiftsync` (outpoints mode) over Core's datadir: the hints from its chainstate pass in
    any split into ranges; one spent output hinted unspent, or one unspent output left out, fails."""
    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "120", "--target-mb", "2", "--seed", "32",
            "--start-time", str(START), "--no-progress", "--json")
    blocks = records(tmp_path / "chain" / "blocks")[1:]
    datadir, height, expected, coins, spendable = core_datadir_and_hints(tmp_path, blocks)
    good = tmp_path / "good.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", good)
    assert good.read_bytes() == expected
    plain = json.loads(run_cli(cli, "hints", "--json", "--datadir", datadir, "--out", tmp_path / "plain.hints",
                               "--policy", "plain").stdout)
    assert (plain["policy"], plain["height"], plain["coins"]) == ("plain", height, coins), plain
    assert (tmp_path / "plain.hints").read_bytes() == expected, "the policy changes how blocks are held, not the hints"
    for ranges in ("1", "3", "7"):
        r = run_cli(cli, "swiftsync", "--json", "--hints", good, "--datadir", datadir, "--ranges", ranges, "--threads", "2")
        v = json.loads(r.stdout)
        assert v["ok"] and v["reason"] is None and v["policy"] == "hardened", v
        assert v["counts"]["blocks"] == height and v["counts"]["unspent"] == coins
        assert v["counts"]["inputs"] > 0 and v["supply_sat"] <= v["supply_bound_sat"]
    plain = json.loads(run_cli(cli, "swiftsync", "--json", "--hints", good, "--datadir", datadir, "--policy", "plain").stdout)
    assert plain["ok"] and (plain["policy"], plain["counts"]) == ("plain", v["counts"]), plain

    lists = parse_lists(expected, height)
    h = next(h for h in range(height, 0, -1) if len(lists[h - 1]) < spendable[h - 1] and lists[h - 1])
    spent = next(i for i in range(spendable[h - 1]) if i not in lists[h - 1])
    for wrong in (sorted(lists[h - 1] + [spent]), lists[h - 1][1:]):
        bad = list(lists)
        bad[h - 1] = wrong
        (tmp_path / "bad.hints").write_bytes(hintsfile(bad))
        r = run_cli(cli, "swiftsync", "--json", "--hints", tmp_path / "bad.hints", "--datadir", datadir, check=False)
        assert r.returncode == 2, r.stderr
        assert "aggregates differ" in json.loads(r.stdout)["reason"]


def parse_lists(data, height):
    """The lists of a hintsfile, decoded here from BIP 456's text (the BIP's reading order)."""
    pos, lists = 9, []

    def cs():
        nonlocal pos
        first = data[pos]
        size = {0xFD: 2, 0xFE: 4, 0xFF: 8}.get(first, 0)
        value = int.from_bytes(data[pos + 1:pos + 1 + size], "little") if size else first
        pos += 1 + size
        return value

    for _ in range(height):
        n = cs()
        if n == 0:
            lists.append([])
            continue
        m = cs()
        low = ((m + 1) // n).bit_length() - 1
        lbytes, hbytes = (n * low + 7) // 8, (n + (m >> low) + 7) // 8
        lbits = [(data[pos + i // 8] >> (7 - i % 8)) & 1 for i in range(lbytes * 8)]
        hbits = [(data[pos + lbytes + i // 8] >> (7 - i % 8)) & 1 for i in range(hbytes * 8)]
        pos += lbytes + hbytes
        values, high, at = [], 0, 0
        for k in range(n):
            while not hbits[at]:
                high += 1
                at += 1
            at += 1
            values.append((high << low) | sum(lbits[k * low + b] << b for b in range(low)))
        lists.append(values)
    assert pos == len(data)
    return lists


def test_hints_cli_errors(cli, tmp_path):
    r = run_cli(cli, "hints", "--out", tmp_path / "x.hints", check=False)
    assert r.returncode != 0
    r = run_cli(cli, "hints", "--blocks-dir", tmp_path, "--chainstate", tmp_path, "--snapshot", tmp_path / "s",
                "--out", tmp_path / "x.hints", check=False)
    assert r.returncode != 0
    r = run_cli(cli, "hints", "--blocks-dir", tmp_path, "--chainstate", tmp_path, "--out", tmp_path / "x.hints", check=False)
    assert r.returncode == 1 and r.stderr.startswith("ibdkit: error: "), r.stderr
    assert not (tmp_path / "x.hints").exists()


def test_replay_write_hints_only_after_a_clean_run(cli, tmp_path):
    """--write-hints is refused where it means nothing (usage errors, before any work), and a run
    that rejects a block writes no hintsfile."""
    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "30", "--target-mb", "1", "--seed", "33",
            "--start-time", str(START), "--no-progress", "--json")
    bdir = tmp_path / "chain" / "blocks"
    out = tmp_path / "x.hints"
    for extra in (["--policy", "all"], ["--swiftsync", tmp_path / "none.hints"]):
        r = run_cli(cli, "replay", "-q", "--blocks-dir", bdir, "--write-hints", out, *extra, check=False)
        assert r.returncode == 64 and "--write-hints" in r.stderr, r.stderr
    r = run_cli(cli, "replay", "-q", "--blocks-dir", bdir, "--write-hints", tmp_path / "no" / "x.hints", check=False)
    assert r.returncode == 64 and "does not exist" in r.stderr, r.stderr

    # Block 20's last byte (its last transaction's lock time) changed: rejected, so no hintsfile.
    name, offset, payload, _ = framed_records(bdir)[20]
    f = bdir / name
    data = bytearray(f.read_bytes())
    data[offset + len(payload) - 1] ^= 1
    f.write_bytes(bytes(data))
    r = run_cli(cli, "replay", "--blocks-dir", bdir, "--write-hints", out, check=False)
    assert r.returncode == 2 and "no hintsfile written" in r.stderr, r.stderr
    assert not out.exists() and not list(tmp_path.glob("*.partial*"))
