"""Scripts in the engine: `ibdkit replay` verifies every input's scripts where Core's assumevalid rule
does (regtest has no assumevalid block: every script), and rejects a block with one flipped
signature byte with the reason and at the height Core's engine does; with --assumevalid set to a
block two weeks of work above it, the same broken block is skipped as Core would skip it."""
import json
import re
import struct

import pytest

from conftest import import_pbk, run_cli  # noqa: E402

pbk = import_pbk()

from test_block_differential import Tx, merkle, parse_block, ser_block, sha256d  # noqa: E402
from test_replay_differential import REGTEST_MAGIC, _core_reason, _mine, _records  # noqa: E402

BROKEN_HEIGHT = 202          # the first block of Core's regtest chain with signed spends (20 P2WPKH)
BROKEN_TX = 7                # the transaction whose signature gets a flipped byte
TWO_WEEKS_OF_BLOCKS = 2016   # regtest: equal bits everywhere, 600 s of equivalent time a block
EVAL_FALSE = ("block-script-verify-flag-failed (Script evaluated without error but finished with a "
              "false/empty top stack element)")


def replay(cli, blocks, *args):
    r = run_cli(cli, "replay", "-q", "--json", "--blocks-dir", blocks, *args, check=False)
    assert r.returncode in (0, 2), r.stderr
    return json.loads(r.stdout)


def write_blk(path, blocks):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(REGTEST_MAGIC + struct.pack("<I", len(b)) + b for b in blocks))
    return path


def relink(blocks, first):
    """Blocks from index `first` on point at the (new) hash of the block before, mined again."""
    out = list(blocks)
    for i in range(first, len(out)):
        header = bytearray(out[i][:80])
        header[4:36] = sha256d(out[i - 1][:80])
        out[i] = _mine(header) + out[i][80:]
    return out


def flip_signature(records):
    """Core's regtest chain with one byte inside the DER signature of one P2WPKH spend of block
    BROKEN_HEIGHT flipped: its witness commitment and merkle root recomputed, the block and every
    later one mined again on the new hashes."""
    raw = records[BROKEN_HEIGHT - 1]
    header, txs = parse_block(raw)
    sig = bytearray(txs[BROKEN_TX].wit[0][0])
    assert sig[0] == 0x30 and len(sig) > 60, "a DER signature"
    sig[10] ^= 0x01  # inside r: still strict DER, no longer a valid signature
    txs[BROKEN_TX].wit[0][0] = bytes(sig)
    cb = txs[0]
    for out in cb.vout:
        if out[1][:6] == b"\x6a\x24\xaa\x21\xa9\xed":  # BIP141: wtxids, the coinbase's as zero
            root = merkle([b"\0" * 32] + [sha256d(t.ser()) for t in txs[1:]])
            out[1] = out[1][:6] + sha256d(root + cb.wit[0][0])
    block = ser_block(header, txs)
    blocks = list(records)
    blocks[BROKEN_HEIGHT - 1] = _mine(bytearray(block[:80])) + block[80:]
    return relink(blocks, BROKEN_HEIGHT)


def script_num(n):
    out = bytearray()
    while n:
        out.append(n & 0xFF)
        n >>= 8
    if out and out[-1] & 0x80:
        out.append(0)
    return bytes([len(out)]) + bytes(out)


def extend(blocks, count, first_height):
    """`count` coinbase-only blocks on top (BIP34 heights, no witness, zero value)."""
    out = list(blocks)
    for k in range(count):
        height = first_height + k
        prev = out[-1][:80]
        time = struct.unpack_from("<I", prev, 68)[0] + 1
        cb = Tx(2, [[b"\0" * 32 + b"\xff\xff\xff\xff", script_num(height) + b"\x51", 0xFFFFFFFF]], [[0, b"\x51"]])
        header = struct.pack("<I", 0x20000000) + sha256d(prev) + b"\0" * 32 + struct.pack("<III", time, 0x207FFFFF, 0)
        block = ser_block(header, [cb])
        out.append(_mine(bytearray(block[:80])) + block[80:])
    return out


def core_verdict(datadir, blk):
    """Core's engine imports `blk`: (active chain height, the script reason it logs, if any)."""
    height, _, msgs = _core_reason(datadir, blk)
    reasons = [m.group(0) for msg in msgs for m in [re.search(r"block-script-verify-flag-failed \([^)]*\)", msg)] if m]
    return height, reasons


def non_coinbase_inputs(records):
    return sum(len(tx.vin) for raw in records for tx in parse_block(raw)[1][1:])


@pytest.fixture(scope="module")
def regtest(shared):
    return _records(shared / "regtest" / "core_kernel_blocks_1-206.blk")


def test_every_script_of_cores_regtest_chain_verifies(cli, shared, regtest):
    blk = shared / "regtest" / "core_kernel_blocks_1-206.blk"
    inputs = non_coinbase_inputs(regtest)
    assert inputs > 0
    runs = {}
    for args in (("--assumevalid", "0"), (), ("--threads", "1", "--assumevalid", "0"), ("--threads", "2")):
        got = replay(cli, blk, *args)
        assert got.get("reject_reason") is None, got
        assert got["height"] == 206
        assert got["script_checked_inputs"] == inputs
        assert got["script_checks_from_height"] == 1
        runs[args] = got
    # Regtest has no assumevalid block: the default verifies too, for Core's reason.
    assert runs[("--assumevalid", "0")]["script_check_reason"] == "assumevalid=0 (always verify)"
    assert runs[()]["script_check_reason"] == "assumevalid=0 (always verify)"
    assert len({g["hash_serialized_3"] for g in runs.values()}) == 1


def test_a_flipped_signature_is_rejected_as_core_rejects_it(cli, shared, tmp_path, regtest):
    blocks = flip_signature(regtest)
    blk = write_blk(tmp_path / "bad" / "blk00000.dat", blocks)
    height, reasons = core_verdict(tmp_path / "core", blk)
    assert height == BROKEN_HEIGHT - 1
    assert reasons and reasons[0] == EVAL_FALSE, reasons
    for threads in ("1", "2", "3"):
        got = replay(cli, blk.parent, "--assumevalid", "0", "--threads", threads)
        assert (got["reject_height"], got["reject_reason"]) == (BROKEN_HEIGHT, EVAL_FALSE), got
        assert got["height"] == BROKEN_HEIGHT - 1
    # Nothing of the rejected block reached the chainstate: it is the chain's up to the block below.
    got = replay(cli, blk.parent, "--assumevalid", "0", "--chainstate", tmp_path / "cs", "--dbcache", "0")
    assert got["reject_height"] == BROKEN_HEIGHT
    on_disk = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", tmp_path / "cs", "--json").stdout)
    below = replay(cli, shared / "regtest" / "core_kernel_blocks_1-206.blk", "--stop-height", str(BROKEN_HEIGHT - 1))
    assert on_disk["hash_serialized_3"] == below["hash_serialized_3"]
    # Default (regtest: none), and an assumevalid block too close to the tip: verified, rejected.
    assert replay(cli, blk.parent)["reject_reason"] == EVAL_FALSE
    tip = sha256d(blocks[-1][:80])[::-1].hex()
    got = replay(cli, blk.parent, "--assumevalid", tip)
    assert got["reject_reason"] == EVAL_FALSE
    assert got["script_check_reason"] == "block too recent relative to best header"
    got = replay(cli, blk.parent, "--assumevalid", "11" * 32)
    assert got["reject_reason"] == EVAL_FALSE
    assert got["script_check_reason"] == "assumevalid hash not in headers"


def test_assumevalid_skips_where_core_would(cli, tmp_path, regtest):
    """The broken chain with two weeks of blocks on top: below an assumevalid block, the broken
    block is more than two weeks of work below the best header, so its scripts are skipped and the
    chain is accepted; without assumevalid it is rejected, by Core's engine too."""
    extra = TWO_WEEKS_OF_BLOCKS + 2
    blocks = extend(flip_signature(regtest), extra, len(regtest) + 1)
    tip_height = len(blocks)
    blk = write_blk(tmp_path / "long" / "blk00000.dat", blocks)
    hash_at = {h + 1: sha256d(b[:80])[::-1].hex() for h, b in enumerate(blocks)}
    # Skipped up to tip - 2017 (more than 2016 blocks of work above), verified from there on.
    last_skipped = tip_height - TWO_WEEKS_OF_BLOCKS - 1
    assert last_skipped >= BROKEN_HEIGHT
    for threads in ("1", "2"):
        got = replay(cli, blk.parent, "--assumevalid", hash_at[tip_height], "--threads", threads)
        assert got.get("reject_reason") is None, got
        assert got["height"] == tip_height
        assert got["script_checks_from_height"] == last_skipped + 1
        assert got["script_check_reason"] == "block too recent relative to best header"
        assert got["script_checked_inputs"] == non_coinbase_inputs(blocks[last_skipped:])
    # The assumevalid block low in the chain: blocks above it verify ("above assumevalid height").
    got = replay(cli, blk.parent, "--assumevalid", hash_at[BROKEN_HEIGHT])
    assert got.get("reject_reason") is None and got["script_checks_from_height"] == BROKEN_HEIGHT + 1, got
    assert got["script_check_reason"] == "block height above assumevalid height"
    got = replay(cli, blk.parent, "--assumevalid", hash_at[BROKEN_HEIGHT - 1])
    assert (got["reject_height"], got["reject_reason"]) == (BROKEN_HEIGHT, EVAL_FALSE), got
    got = replay(cli, blk.parent, "--assumevalid", "0")
    assert (got["reject_height"], got["reject_reason"]) == (BROKEN_HEIGHT, EVAL_FALSE), got
    height, reasons = core_verdict(tmp_path / "core", blk)
    assert height == BROKEN_HEIGHT - 1 and reasons[0] == EVAL_FALSE


def test_mainnet_scripts_verify(cli, shared):
    blocks = shared / "mainnet" / "blk_0-599"
    verified = replay(cli, blocks, "--assumevalid", "0")
    default = replay(cli, blocks)
    assert verified.get("reject_reason") is None and verified["height"] == 599
    assert verified["script_checked_inputs"] > 0
    assert verified["hash_serialized_3"] == default["hash_serialized_3"]
    # Mainnet's assumevalid block (height 912,683) is not in these files: Core verifies too.
    assert default["script_check_reason"] == "assumevalid hash not in headers"
    assert default["script_checked_inputs"] == verified["script_checked_inputs"]
