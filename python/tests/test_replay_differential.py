"""Differential: `ibdkit replay` over block files gives exactly the UTXO statistics of the chainstate
Bitcoin Core's engine builds from the same files (and every buffer policy agrees), and on generated
chains broken in one way each, rejects the broken block with the reason Core's engine logs."""
import json
import shutil

import pytest

from conftest import import_pbk  # noqa: E402

pbk = import_pbk()

from conftest import run_cli  # noqa: E402
from test_coins_differential import build_chainstate, expected_stats  # noqa: E402
from chain_model import connect_block  # noqa: E402

FIELDS = ("txouts", "transactions", "bogosize", "total_amount_sat", "hash_serialized_3")


def replay_json(cli, *args):
    r = run_cli(cli, "replay", "-q", "--json", *args, check=False)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("which", ["regtest", "mainnet"])
def test_replay_matches_core(cli, shared, tmp_path, which):
    if which == "regtest":
        files = [shared / "regtest" / "core_kernel_blocks_1-206.blk"]
        chain = pbk.ChainType.REGTEST
        blocks_arg = files[0]
    else:
        files = [shared / "mainnet" / "blk_0-599" / f for f in ("blk00000.dat", "blk00001.dat")]
        chain = pbk.ChainType.MAINNET
        blocks_arg = files[0].parent
    height, tip, utxo = build_chainstate(tmp_path / "core", chain, files)
    exp = expected_stats(utxo)
    got = replay_json(cli, "--blocks-dir", blocks_arg)
    assert got["height"] == height
    assert got["bestblock"] == tip
    for k in FIELDS:
        assert got[k] == exp[k], k
    # Core's own chainstate, read by ibdkit, says the same.
    core = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", tmp_path / "core" / "chainstate", "--json").stdout)
    assert core["hash_serialized_3"] == got["hash_serialized_3"]
    # Through P2P framing, and with every policy: identical.
    for policy in ("plain", "zero-after-free", "barrier-only", "secure", "hardened"):
        again = replay_json(cli, "--blocks-dir", blocks_arg, "--policy", policy, "--via-p2p")
        assert again["hash_serialized_3"] == exp["hash_serialized_3"], policy


def test_replay_stop_and_resume(cli, shared, tmp_path):
    blocks = shared / "mainnet" / "blk_0-599"
    cs = tmp_path / "cs"
    first = replay_json(cli, "--blocks-dir", blocks, "--chainstate", cs, "--stop-height", "250")
    assert first["height"] == 250
    second = replay_json(cli, "--blocks-dir", blocks, "--chainstate", cs)
    assert second["start_height"] == 251 and second["height"] == 599
    whole = replay_json(cli, "--blocks-dir", blocks)
    assert second["hash_serialized_3"] == whole["hash_serialized_3"]
    # The chainstate it wrote is readable by `utxo stats` and agrees.
    st = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", cs, "--json").stdout)
    assert st["hash_serialized_3"] == whole["hash_serialized_3"]


def test_replay_rejects_with_core_reason(cli, shared, tmp_path):
    """A block that pays its coinbase too much is rejected with Core's reason and the height."""
    src = (shared / "regtest" / "core_kernel_blocks_1-206.blk").read_bytes()
    # Records: magic(4) | size(4) | block. Find block at height 1 (the first record) and raise its
    # coinbase output value; then fix the merkle root and grind a valid regtest nonce.
    import hashlib
    import struct

    def h2(b):
        return hashlib.sha256(hashlib.sha256(b).digest()).digest()

    size = struct.unpack_from("<I", src, 4)[0]
    block = bytearray(src[8:8 + size])
    assert block[80] == 1, "expects a block with only the coinbase"
    tx = 81
    p = tx + 4  # version
    segwit = block[p] == 0 and block[p + 1] == 1
    body_start = p + 2 if segwit else p
    p = body_start
    assert block[p] == 1  # one input
    p += 1 + 36
    p += 1 + block[p] + 4  # scriptSig, sequence
    nout = block[p]
    p += 1
    first_value_at = p
    for _ in range(nout):
        p += 8
        p += 1 + block[p]
    body_end = p
    if segwit:  # one witness stack for the one input
        items = block[p]
        p += 1
        for _ in range(items):
            p += 1 + block[p]
    locktime = bytes(block[p:p + 4])
    assert p + 4 == len(block)
    value = struct.unpack_from("<q", block, first_value_at)[0]
    struct.pack_into("<q", block, first_value_at, value + 1)
    # txid over the no-witness serialization; with one transaction the merkle root is the txid.
    # (The witness commitment commits to the coinbase's wtxid as zero: unaffected.)
    stripped = bytes(block[tx:tx + 4]) + bytes(block[body_start:body_end]) + locktime
    block[36:68] = h2(stripped)
    for nonce in range(1 << 20):
        struct.pack_into("<I", block, 76, nonce)
        if int.from_bytes(h2(bytes(block[:80])), "little") < (0x7fffff << (8 * (0x20 - 3))):
            break
    bad = bytearray(src)
    bad[8:8 + size] = block
    path = tmp_path / "blk00000.dat"
    path.write_bytes(bytes(bad))
    r = run_cli(cli, "replay", "-q", "--json", "--blocks-dir", path, check=False)
    assert r.returncode == 2, r.stderr
    got = json.loads(r.stdout)
    assert got["reject_reason"] == "bad-cb-amount"
    assert got["reject_height"] == 1


def test_replay_is_read_only_on_block_files(cli, shared, tmp_path):
    src = shared / "mainnet" / "blk_0-599"
    copy = tmp_path / "blocks"
    shutil.copytree(src, copy)
    before = {p.name: p.read_bytes() for p in copy.iterdir()}
    replay_json(cli, "--blocks-dir", copy, "--stop-height", "100")
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == before


def test_ctrl_c_flushes_and_a_second_run_resumes(cli, tmp_path):
    """SIGINT stops replay after the current block, flushes (exit 130), and the next run resumes
    from the flushed tip to the same UTXO hash as an uninterrupted replay."""
    import signal
    import subprocess
    import time

    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "400", "--target-mb", "8",
            "--start-time", "1700000000", "--no-progress")
    blocks = tmp_path / "chain" / "blocks"
    whole = replay_json(cli, "--blocks-dir", blocks)
    cs = tmp_path / "cs"
    # --dbcache 0 flushes after every block (~1 ms each). A fixed sleep raced the whole run on a fast
    # machine, so the interrupt goes out as soon as the chainstate directory appears: the handler is
    # installed before the replay opens it, and 400 flushes are still ahead.
    p = subprocess.Popen([str(cli), "replay", "-q", "--json", "--blocks-dir", str(blocks), "--chainstate", str(cs),
                          "--dbcache", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not cs.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, f"exit {p.returncode}: the interrupt should have stopped the replay\n{err}"
    first = json.loads(out)
    # The interrupt is honoured between blocks; arriving after the last one is legal too.
    # height -1 (bestblock null): stopped before the first block connected.
    assert first["interrupted"] is True and -1 <= first["height"] <= 400
    second = replay_json(cli, "--blocks-dir", blocks, "--chainstate", cs)
    assert second["start_height"] == max(first["height"], 0) + 1
    assert second["height"] == 400
    assert second["hash_serialized_3"] == whole["hash_serialized_3"]


# ---- reject reasons: Core's engine and `ibdkit replay` on chains broken in one way each ----------

REGTEST_MAGIC = b"\xfa\xbf\xb5\xda"
BREAK_AT = 120


def _records(path):
    import struct

    data, out, pos = path.read_bytes(), [], 0
    while pos + 8 <= len(data):
        size = struct.unpack_from("<I", data, pos + 4)[0]
        out.append(data[pos + 8:pos + 8 + size])
        pos += 8 + size
    return out


def _mine(header):
    """Grinds the nonce until the header meets its own bits (regtest targets: a few tries)."""
    import struct

    from test_block_differential import sha256d

    bits = struct.unpack_from("<I", header, 72)[0]
    target = (bits & 0xFFFFFF) << (8 * ((bits >> 24) - 3))
    for nonce in range(1 << 24):
        struct.pack_into("<I", header, 76, nonce)
        if int.from_bytes(sha256d(bytes(header)), "little") <= target:
            return bytes(header)
    raise AssertionError("no nonce")


def _with_txs(raw, extra):
    """Block `raw` with its transactions replaced by its coinbase and `extra`, the witness
    commitment and merkle root recomputed and the header mined again."""
    from test_block_differential import merkle, parse_block, ser_block, sha256d

    header, txs = parse_block(raw)
    cb = txs[0].copy()
    new = [cb] + extra
    for out in cb.vout:
        if out[1][:6] == b"\x6a\x24\xaa\x21\xa9\xed":  # BIP141 commitment: wtxids, the coinbase's as zero
            root = merkle([b"\0" * 32] + [sha256d(t.ser()) for t in extra])
            out[1] = out[1][:6] + sha256d(root + cb.wit[0][0])
    block = bytearray(ser_block(header, new))
    return _mine(bytearray(block[:80])) + bytes(block[80:])


def _utxos(records):
    """Coins of blocks 1.. not spent by later blocks: {(txid, n): (height, coinbase, value, spk)}."""
    from test_block_differential import parse_block

    utxo = {}
    for h, raw in enumerate(records):
        if h == 0:
            continue
        _, txs = parse_block(raw)
        connect_block(utxo, h, [(tx.txid(), [(prev[:32], int.from_bytes(prev[32:], "little")) for prev, _, _ in tx.vin],
                                 [tuple(out) for out in tx.vout]) for tx in txs])
    return utxo


def _break(kind, records):
    """The blocks up to BREAK_AT with block BREAK_AT broken in one way."""
    import struct

    from test_block_differential import Tx

    below, raw = records[:BREAK_AT], records[BREAK_AT]
    header = bytearray(raw[:80])

    def spend(prevouts, version=2, sequence=0xFFFFFFFF, script_sig=b""):
        return Tx(version, [[txid + struct.pack("<I", n), script_sig, sequence] for txid, n in prevouts], [[1000, b"\x51"]])

    utxo = _utxos(below)
    if kind == "time-too-old":
        times = sorted(struct.unpack_from("<I", r, 68)[0] for r in below[-11:])
        struct.pack_into("<I", header, 68, times[5])  # the median time past itself
        bad = _mine(header) + raw[80:]
    elif kind == "bad-diffbits":
        struct.pack_into("<I", header, 72, 0x207FFFFE)  # regtest wants its pow limit, 0x207fffff
        bad = _mine(header) + raw[80:]
    elif kind == "bad-version(0x00000003)":
        struct.pack_into("<I", header, 0, 3)  # BIP65 is active from height 1
        bad = _mine(header) + raw[80:]
    elif kind == "bad-txns-inputs-missingorspent":
        bad = _with_txs(raw, [spend([(b"\x42" * 32, 7)])])
    elif kind == "bad-txns-premature-spend-of-coinbase":
        young = [op for op, (h, cb, _, _) in utxo.items() if cb and h == BREAK_AT - 1]
        bad = _with_txs(raw, [spend(young[:1])])
    elif kind == "bad-txns-nonfinal":
        # BIP68: 10 blocks after the coin's, which is one block below.
        recent = [op for op, (h, cb, _, _) in utxo.items() if not cb and h == BREAK_AT - 1]
        bad = _with_txs(raw, [spend(recent[:1], sequence=10)])
    elif kind == "bad-blk-sigops":
        # Three P2SH spends whose redeem script is 500 OP_CHECKMULTISIG: 3 x 40,000 sigop cost
        # (counted before Core runs the scripts, which would fail on the hash).
        p2sh = [op for op, (h, cb, _, spk) in utxo.items() if len(spk) == 23 and spk[0] == 0xA9 and not cb]
        redeem = b"\xae" * 500
        bad = _with_txs(raw, [spend(p2sh[:3], script_sig=b"\x4d" + struct.pack("<H", len(redeem)) + redeem)])
    elif kind == "bad-txns-BIP30":
        # An earlier transaction again, one of whose outputs is still unspent: it would overwrite
        # that coin (and its inputs are spent, so it would fail later anyway).
        from test_block_differential import parse_block

        again = next(tx for r in below[1:] for tx in parse_block(r)[1][1:]
                     if any((tx.txid(), n) in utxo for n in range(len(tx.vout))))
        bad = _with_txs(raw, [again])
    else:
        raise AssertionError(kind)
    return below + [bad]


def _core_reason(datadir, blk):
    """Imports `blk` with Core's engine; returns (active height, the reason its log gives)."""
    import re

    msgs = []
    pbk.enable_log_category(pbk.LogCategory.VALIDATION)
    pbk.set_log_level_category(pbk.LogCategory.VALIDATION, pbk.LogLevel.DEBUG)
    conn = pbk.LoggingConnection(msgs.append)
    cm = pbk.load_chainman(datadir, pbk.ChainType.REGTEST)
    cm.import_blocks([blk])
    height = cm.get_active_chain().height
    del cm
    del conn
    # Core logs state.ToString() ("reason, debug message") after the failing block's hash:
    # "ContextualCheckBlockHeader: <hash>, time-too-old, …", "ConnectBlock <hash> failed, bad-…".
    pat = re.compile(r"(?:ContextualCheckBlockHeader: [0-9a-f]{64}|ConnectBlock [0-9a-f]{64} failed|AcceptBlock FAILED \(?)"
                     r",? ?([A-Za-z0-9()\-]+)")
    reasons = [m.group(1) for msg in msgs for m in [pat.search(msg)] if m]
    return height, reasons, msgs


@pytest.mark.parametrize("kind", ["time-too-old", "bad-diffbits", "bad-version(0x00000003)",
                                  "bad-txns-inputs-missingorspent", "bad-txns-premature-spend-of-coinbase",
                                  "bad-txns-nonfinal", "bad-blk-sigops", "bad-txns-BIP30"])
def test_reject_reason_matches_core(cli, tmp_path, kind):
    import struct

    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", str(BREAK_AT + 5), "--target-mb", "2",
            "--start-time", "1700000000", "--no-progress")
    blocks = _break(kind, _records(tmp_path / "chain" / "blocks" / "blk00000.dat"))
    bad = tmp_path / "bad"
    bad.mkdir()
    blk = bad / "blk00000.dat"
    blk.write_bytes(b"".join(REGTEST_MAGIC + struct.pack("<I", len(b)) + b for b in blocks))
    height, reasons, msgs = _core_reason(tmp_path / "core", blk)
    assert height == BREAK_AT - 1
    assert reasons, "Core logged no reason:\n" + "\n".join(m for m in msgs if "UpdateTip" not in m)[-3000:]
    for threads in ("1", "2"):
        r = run_cli(cli, "replay", "-q", "--json", "--blocks-dir", bad, "--threads", threads, check=False)
        assert r.returncode == 2, r.stderr
        got = json.loads(r.stdout)
        assert got["reject_height"] == BREAK_AT
        assert got["reject_reason"] == reasons[0] == kind, (got["reject_reason"], reasons)
    if kind == "bad-txns-BIP30":
        # Resumed from a chainstate that holds the coin on disk only (the cache starts empty): where
        # BIP34 holds from height 1 that coin is read only once the block fails; the reason is Core's.
        for threads in ("1", "2"):
            cs = tmp_path / f"cs{threads}"
            first = replay_json(cli, "--blocks-dir", bad, "--chainstate", cs, "--stop-height", str(BREAK_AT - 1))
            assert first["height"] == BREAK_AT - 1
            r = run_cli(cli, "replay", "-q", "--json", "--blocks-dir", bad, "--chainstate", cs, "--threads", threads,
                        check=False)
            assert r.returncode == 2, r.stderr
            got = json.loads(r.stdout)
            assert (got["reject_height"], got["reject_reason"]) == (BREAK_AT, kind), got
