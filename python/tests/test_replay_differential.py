"""Differential: `ibdkit replay` over block files gives exactly the UTXO statistics of the chainstate
Bitcoin Core's engine builds from the same files (and every buffer policy agrees)."""
import json
import shutil

import pytest

from conftest import import_pbk  # noqa: E402

pbk = import_pbk()

from conftest import run_cli  # noqa: E402
from test_coins_differential import build_chainstate, expected_stats  # noqa: E402

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
    # --dbcache 0 flushes after every block: slow enough to be interrupted mid-run.
    p = subprocess.Popen([str(cli), "replay", "-q", "--json", "--blocks-dir", str(blocks), "--chainstate", str(cs),
                          "--dbcache", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    if p.returncode == 0:
        pytest.skip("replay finished before the interrupt arrived")
    assert p.returncode == 130, err
    first = json.loads(out)
    assert first["interrupted"] is True and 0 <= first.get("height", 0) < 400
    second = replay_json(cli, "--blocks-dir", blocks, "--chainstate", cs)
    assert second["start_height"] == first.get("height", 0) + 1
    assert second["height"] == 400
    assert second["hash_serialized_3"] == whole["hash_serialized_3"]
