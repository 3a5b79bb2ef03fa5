"""BIP 325 on the real default-signet blocks of tests/data: `ibdkit replay --network signet` accepts
them as Core's engine does, and refuses a block whose solution's signature changed with Core's
reason (bad-signet-blksig) at its height, in the classic replay and in SwiftSync, while Core's
engine refuses the same block.

Two tamperings of one byte of the solution's signature (a byte of R in its DER encoding):
- at the tip, height 70, with the merkle root recomputed and the header mined again, so that the
  block breaks the signet rule and nothing else (without the rule it would be accepted);
- at height 40 with the header kept (same hash, so the rest of the chain still links): the merkle
  root no longer matches, and Core refuses the signature first.
"""
import hashlib
import json
import re
import shutil
import struct

import pytest

from conftest import import_pbk  # noqa: E402

pbk = import_pbk()

from conftest import run_cli  # noqa: E402
from test_coins_differential import build_chainstate, expected_stats  # noqa: E402

MAGIC = b"\x0a\x03\xcf\x40"
SIGNET_HEADER = bytes.fromhex("ecc7daa2")
# The tip's signature byte flipped leaves a header that needs a new nonce: found once by trying
# nonces from 0 upwards (about 2.5 million SHA256d, too slow for every run); the test checks that it
# meets the block's target, so a changed tampering fails here rather than elsewhere.
TIP_NONCE = 2461849
# From the start of the solution (after the header): its scriptSig's length, OP_0, the push's
# length, then the DER signature (0x30 len 0x02 len R...): the byte flipped is R's seventh.
FLIPPED = 13


def sha256d(b):
    return hashlib.sha256(hashlib.sha256(b).digest()).digest()


def records(path):
    data, out, pos = path.read_bytes(), [], 0
    while pos + 8 <= len(data) and data[pos:pos + 4] == MAGIC:
        size = struct.unpack_from("<I", data, pos + 4)[0]
        out.append(data[pos + 8:pos + 8 + size])
        pos += 8 + size
    return out


def write_blocks(folder, blocks):
    folder.mkdir()
    (folder / "blk00000.dat").write_bytes(b"".join(MAGIC + struct.pack("<I", len(b)) + b for b in blocks))
    return folder


def coinbase_only_txid(block):
    """The txid of a block of one transaction (every block here): its serialization without the
    witness marker and stacks."""
    def compact(i):
        first = block[i]
        size = {0xFD: 2, 0xFE: 4, 0xFF: 8}.get(first, 0)
        return (int.from_bytes(block[i + 1:i + 1 + size], "little") if size else first), i + 1 + size

    assert block[80] == 1, "one transaction"
    p = 81 + 4
    segwit = block[p] == 0 and block[p + 1] == 1
    body = p + 2 if segwit else p
    p = body
    n_in, p = compact(p)
    for _ in range(n_in):
        ln, p = compact(p + 36)
        p += ln + 4
    n_out, p = compact(p)
    for _ in range(n_out):
        ln, p = compact(p + 8)
        p += ln
    end = p
    if segwit:
        for _ in range(n_in):
            items, p = compact(p)
            for _ in range(items):
                ln, p = compact(p)
                p += ln
    assert p + 4 == len(block)
    return sha256d(bytes(block[81:85]) + bytes(block[body:end]) + bytes(block[p:p + 4]))


def flip_signature(raw):
    block = bytearray(raw)
    at = block.find(SIGNET_HEADER) + len(SIGNET_HEADER) + FLIPPED
    assert block[at - 12] == 0x00 and block[at - 10] == 0x30, "OP_0 and a DER signature"
    block[at] ^= 0x01
    return block


def meets_target(header):
    bits = struct.unpack_from("<I", header, 72)[0]
    target = (bits & 0xFFFFFF) << (8 * ((bits >> 24) - 3))
    return int.from_bytes(sha256d(bytes(header[:80])), "little") <= target


@pytest.fixture(scope="module")
def chain(shared):
    blocks = records(shared / "signet" / "blk00000.dat")
    assert len(blocks) == 71
    assert coinbase_only_txid(blocks[70]) == blocks[70][36:68]
    tip = flip_signature(blocks[70])
    tip[36:68] = coinbase_only_txid(tip)
    struct.pack_into("<I", tip, 76, TIP_NONCE)
    assert meets_target(tip), "TIP_NONCE no longer mines the tampered tip: grind it again"
    middle = flip_signature(blocks[40])
    assert middle[:80] == blocks[40][:80]
    return {"real": blocks, "tip": blocks[:70] + [bytes(tip)], "middle": blocks[:40] + [bytes(middle)] + blocks[41:]}


def replay(cli, *args):
    r = run_cli(cli, "replay", "-q", "--json", "--network", "signet", *args, check=False)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else r.stderr


def core_check(raw, params):
    """Core's CheckBlock with proof of work and merkle root: 'valid' or the result's name."""
    state = pbk.Block(raw).check(params.consensus_params, pbk.BlockCheckFlags.ALL)
    if state.validation_mode == pbk.ValidationMode.VALID:
        return "valid"
    return state.block_validation_result.name


def test_core_agrees_block_by_block(chain):
    params = pbk.ChainParameters(pbk.ChainType.SIGNET)
    assert all(core_check(raw, params) == "valid" for raw in chain["real"])
    # A signet block refused by its solution is BLOCK_CONSENSUS; a merkle root mismatch would be MUTATED.
    assert core_check(chain["tip"][70], params) == "CONSENSUS"
    assert core_check(chain["middle"][40], params) == "CONSENSUS"


def test_ibdkit_block_check_agrees(cli, chain, tmp_path):
    lines = tmp_path / "blocks.txt"
    lines.write_text("".join(raw.hex() + "\n" for raw in chain["real"] + [chain["tip"][70], chain["middle"][40]]))
    out = [json.loads(x) for x in run_cli(cli, "block", "check", lines, "--lines", "--network", "signet").stdout.splitlines()]
    assert [j["valid"] for j in out] == [True] * 71 + [False, False]
    for j in out[71:]:
        assert (j["result"], j["reject_reason"]) == ("consensus", "bad-signet-blksig"), j


def test_replay_accepts_the_real_chain_as_core(cli, shared, tmp_path):
    files = [shared / "signet" / "blk00000.dat"]
    height, tip, utxo = build_chainstate(tmp_path / "core", pbk.ChainType.SIGNET, files)
    assert height == 70
    rc, got = replay(cli, "--blocks-dir", shared / "signet")
    assert rc == 0, got
    assert (got["height"], got["bestblock"]) == (70, tip)
    assert got["hash_serialized_3"] == expected_stats(utxo)["hash_serialized_3"]


def core_import(datadir, blk):
    """Imports `blk` with Core's engine: (active height, the "reason, debug message" of each refusal
    its log gives)."""
    msgs = []
    pbk.enable_log_category(pbk.LogCategory.VALIDATION)
    pbk.set_log_level_category(pbk.LogCategory.VALIDATION, pbk.LogLevel.DEBUG)
    conn = pbk.LoggingConnection(msgs.append)
    cm = pbk.load_chainman(datadir, pbk.ChainType.SIGNET)
    cm.import_blocks([blk])
    height = cm.get_active_chain().height
    del cm
    del conn
    # Core logs state.ToString(), "reason, debug message", after AcceptBlock's name.
    reasons = [m.group(1) for msg in msgs for m in [re.search(r"AcceptBlock: ([a-z-]+, [^\n]*)", msg)] if m]
    return height, reasons


@pytest.mark.parametrize("which,height", [("tip", 70), ("middle", 40)])
def test_replay_refuses_a_changed_signature_as_core(cli, chain, tmp_path, which, height):
    blocks = write_blocks(tmp_path / "blocks", chain[which])
    core_height, reasons = core_import(tmp_path / "core", blocks / "blk00000.dat")
    assert core_height == height - 1
    assert reasons and reasons[0] == "bad-signet-blksig, signet block signature validation failure", reasons
    for threads in ("1", "2"):
        rc, got = replay(cli, "--blocks-dir", blocks, "--threads", threads)
        assert rc == 2, got
        assert (got["reject_height"], got["reject_reason"]) == (height, "bad-signet-blksig"), got
        assert got["height"] == height - 1


def test_swiftsync_refuses_the_tampered_tip(cli, shared, chain, tmp_path):
    """SwiftSync's range check and its replay run CheckBlock too: with the real chain's hints, the
    tampered tip (same transactions, same outputs) is refused for its signature alone."""
    hints = tmp_path / "signet.hints"
    rc, got = replay(cli, "--blocks-dir", shared / "signet", "--write-hints", hints)
    assert rc == 0 and hints.exists(), got
    good = json.loads(run_cli(cli, "swiftsync", "--json", "--network", "signet", "--hints", hints,
                              "--blocks-dir", shared / "signet").stdout)
    assert good["ok"], good
    blocks = write_blocks(tmp_path / "blocks", chain["tip"])
    r = run_cli(cli, "swiftsync", "--json", "--network", "signet", "--hints", hints, "--blocks-dir", blocks, check=False)
    assert r.returncode == 2, r.stderr
    v = json.loads(r.stdout)
    assert not v["ok"] and v["reason"].endswith("at height 70: bad-signet-blksig"), v
    rc, got = replay(cli, "--blocks-dir", blocks, "--swiftsync", hints, "--swiftsync-mode", "outpoints")
    assert rc == 2, got
    assert not got["swiftsync"]["ok"] and got["coins_written"] == 0, got
    assert got["swiftsync"]["reason"].endswith("at height 70: bad-signet-blksig"), got
    # Untouched, the copy passes: the tampering is what is refused.
    shutil.rmtree(blocks)
    write_blocks(blocks, chain["real"])
    rc, got = replay(cli, "--blocks-dir", blocks, "--swiftsync", hints, "--swiftsync-mode", "outpoints")
    assert rc == 0, got
