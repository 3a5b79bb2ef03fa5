"""Core's own known answers: two regtest chains of Core's test suites whose UTXO set hash Core pins
in its chainparams (m_assumeutxo_data, heights 200 and 110).

The chain is Core's `CreateBlockChain(2 * COINBASE_MATURITY, params)` (src/test/util/mining.cpp),
rebuilt here byte for byte: block i (0-based, height i + 1) holds one coinbase with version 2,
nLockTime i, nSequence 0xfffffffe, scriptSig `CScript() << (i + 1) << OP_0`, one output of
GetBlockSubsidy(i + 1) to P2WSH(OP_TRUE); header version 4, time genesis + i + 1, the genesis
nBits, the first nonce from 0 that meets the target. ibdkit replays it; the chainstate at 200 must
have Core's pinned block hash, coin count and hash_serialized_3, and a snapshot of it must load
without --expect-hash (load-snapshot checks Core's pinned value itself).

Height 110 is `TestChain100Setup` (src/test/util/setup_common.cpp) plus the 10 blocks
`validation_chainstatemanager_tests`' SnapshotTestSetup mines: BlockAssembler blocks paying
P2PK(private key 1) — coinbase version 2, scriptSig `<height> OP_0`, nSequence 0xfffffffe, nLockTime
height − 1, the witness commitment output (empty witness tree) and the 32-zero-byte witness
reserved value; header version 0x20000000 (no deployment signals before the first 144-block
period), mock time 1598887952 + height − 1. Core's test asserts the tip at 100: checked here too."""
import hashlib
import json
import struct

from conftest import run_cli
from chain_model import sha256d  # noqa: E402

REGTEST_MAGIC = bytes.fromhex("fabfb5da")
GENESIS_HASH = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"
GENESIS_TIME = 1296688602
GENESIS_BITS = 0x207FFFFF
HALVING_INTERVAL = 150  # regtest
COIN = 100_000_000
# Core's src/kernel/chainparams.cpp, CRegTestParams m_assumeutxo_data ("For use by fuzz target
# src/test/fuzz/utxo_snapshot.cpp").
PINNED_HEIGHT = 200
PINNED_HASH = "17dcc016d188d16068907cdeb38b75691a118d43053b8cd6a25969419381d13a"
PINNED_BLOCK = "385901ccbd69dff6bbd00065d01fb8a9e464dede7cfe0372443884f9b1dcf6b9"
PINNED_CHAIN_TX_COUNT = 201



def push_int(n):
    """CScript() << n for 0 < n < 2^15 (OP_1..OP_16, else a minimal CScriptNum push)."""
    if 1 <= n <= 16:
        return bytes([0x50 + n])
    num = n.to_bytes((n.bit_length() + 7) // 8, "little")
    if num[-1] & 0x80:
        num += b"\x00"
    return bytes([len(num)]) + num


def coinbase(i):
    height = i + 1
    script_sig = push_int(height) + b"\x00"  # << OP_0
    p2wsh_op_true = b"\x00\x20" + hashlib.sha256(b"\x51").digest()
    value = (50 * COIN) >> (height // HALVING_INTERVAL)
    return (struct.pack("<i", 2) + b"\x01" + b"\x00" * 32 + b"\xff\xff\xff\xff" + bytes([len(script_sig)]) + script_sig +
            struct.pack("<I", 0xFFFFFFFE) + b"\x01" + struct.pack("<q", value) + bytes([len(p2wsh_op_true)]) +
            p2wsh_op_true + struct.pack("<I", i))


def target(bits):
    return (bits & 0xFFFFFF) << (8 * ((bits >> 24) - 3))


def create_block_chain(total):
    """Core's CreateBlockChain: [(hash_hex, raw_block)] for heights 1..total."""
    prev = bytes.fromhex(GENESIS_HASH)[::-1]
    blocks = []
    for i in range(total):
        tx = coinbase(i)
        merkle = sha256d(tx)
        nonce = 0
        while True:
            header = (struct.pack("<i", 4) + prev + merkle + struct.pack("<III", GENESIS_TIME + i + 1, GENESIS_BITS, nonce))
            h = sha256d(header)
            if int.from_bytes(h, "little") <= target(GENESIS_BITS):
                break
            nonce += 1
        blocks.append((h[::-1].hex(), header + b"\x01" + tx))
        prev = h
    return blocks


def write_blk(bdir, blocks):
    bdir.mkdir()
    with open(bdir / "blk00000.dat", "wb") as f:
        for _, raw in blocks:
            f.write(REGTEST_MAGIC + struct.pack("<I", len(raw)) + raw)


# TestChain100Setup: coinbaseKey is the private key 1; its compressed public key is G.
G_COMPRESSED = bytes.fromhex("0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")
TESTCHAIN100_TIP = "0c8c5f79505775a0f6aed6aca2350718ceb9c6f2c878667864d5c7a6d8ffa2a6"
MOCK_TIME = 1598887952
PINNED_110 = ("b952555c8ab81fec46f3d4253b7af256d766ceb39fb7752b9d18cdf4a0141327",
              "6affe030b7965ab538f820a56ef56c8149b7dc1d1c144af57113be080db7c397", 111)


def assembler_block(height, prev):
    """BlockAssembler::CreateNewBlock + TestChain100Setup::CreateBlock for a block without transactions."""
    script_sig = push_int(height) + b"\x00"
    p2pk = bytes([33]) + G_COMPRESSED + b"\xac"
    value = (50 * COIN) >> (height // HALVING_INTERVAL)
    # GenerateCoinbaseCommitment: the witness merkle root of a coinbase-only block is 0.
    commitment = b"\x6a\x24\xaa\x21\xa9\xed" + sha256d(b"\x00" * 64)
    vin = b"\x01" + b"\x00" * 32 + b"\xff\xff\xff\xff" + bytes([len(script_sig)]) + script_sig + struct.pack("<I", 0xFFFFFFFE)
    vout = (b"\x02" + struct.pack("<q", value) + bytes([len(p2pk)]) + p2pk + struct.pack("<q", 0) +
            bytes([len(commitment)]) + commitment)
    lock = struct.pack("<I", height - 1)
    version = struct.pack("<i", 2)
    txid = sha256d(version + vin + vout + lock)
    tx_witness = version + b"\x00\x01" + vin + vout + b"\x01\x20" + b"\x00" * 32 + lock
    nonce = 0
    while True:
        header = (struct.pack("<i", 0x20000000) + prev + txid +
                  struct.pack("<III", MOCK_TIME + height - 1, GENESIS_BITS, nonce))
        h = sha256d(header)
        if int.from_bytes(h, "little") <= target(GENESIS_BITS):
            return h, header + b"\x01" + tx_witness
        nonce += 1


def test_chain100_setup_chain_matches_cores_pinned_assumeutxo_hash(cli, tmp_path):
    prev = bytes.fromhex(GENESIS_HASH)[::-1]
    blocks = []
    for height in range(1, 111):
        prev, raw = assembler_block(height, prev)
        blocks.append((prev[::-1].hex(), raw))
    assert blocks[99][0] == TESTCHAIN100_TIP, "the rebuilt chain is not TestChain100Setup's (tip at 100)"
    write_blk(tmp_path / "blocks", blocks)
    want_hash, want_block, want_tx_count = PINNED_110
    r = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", tmp_path / "blocks").stdout)
    assert (r["height"], r["bestblock"]) == (110, want_block)
    assert r["txouts"] == 110 and r["transactions"] + 1 == want_tx_count
    assert r["hash_serialized_3"] == want_hash


def test_core_fuzz_chain_matches_cores_pinned_assumeutxo_hash(cli, tmp_path):
    blocks = create_block_chain(PINNED_HEIGHT)
    assert blocks[-1][0] == PINNED_BLOCK, "the rebuilt chain is not Core's (block hash at 200)"
    bdir = tmp_path / "blocks"
    write_blk(bdir, blocks)
    cs = tmp_path / "cs"
    r = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", bdir, "--chainstate", cs).stdout)
    assert (r["height"], r["bestblock"]) == (PINNED_HEIGHT, PINNED_BLOCK)
    assert r["txouts"] == PINNED_HEIGHT and r["transactions"] + 1 == PINNED_CHAIN_TX_COUNT  # + genesis
    assert r["hash_serialized_3"] == PINNED_HASH

    # The same answer through --height (temporary chainstate) and a snapshot Core would accept.
    snap = tmp_path / "utxo-200.dat"
    run_cli(cli, "replay", "-q", "--blocks-dir", bdir, "--height", PINNED_HEIGHT, "--dump", "snapshot", "--out", snap)
    loaded = run_cli(cli, "utxo", "load-snapshot", snap, "--chainstate", tmp_path / "loaded", "--network", "regtest",
                     "--no-progress")
    assert f"hash_serialized_3  {PINNED_HASH} (verified)" in loaded.stdout
    assert "base_height        200 (Core's assumeutxo parameters)" in loaded.stdout
