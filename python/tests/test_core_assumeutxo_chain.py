"""Core's own known answer: the regtest chain of Core's utxo_snapshot fuzz target, whose UTXO set
hash Core pins in its chainparams (m_assumeutxo_data, height 200).

The chain is Core's `CreateBlockChain(2 * COINBASE_MATURITY, params)` (src/test/util/mining.cpp),
rebuilt here byte for byte: block i (0-based, height i + 1) holds one coinbase with version 2,
nLockTime i, nSequence 0xfffffffe, scriptSig `CScript() << (i + 1) << OP_0`, one output of
GetBlockSubsidy(i + 1) to P2WSH(OP_TRUE); header version 4, time genesis + i + 1, the genesis
nBits, the first nonce from 0 that meets the target. ibdkit replays it; the chainstate at 200 must
have Core's pinned block hash, coin count and hash_serialized_3, and a snapshot of it must load
without --expect-hash (load-snapshot checks Core's pinned value itself)."""
import hashlib
import json
import struct

from conftest import run_cli

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


def sha256d(b):
    return hashlib.sha256(hashlib.sha256(b).digest()).digest()


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


def test_core_fuzz_chain_matches_cores_pinned_assumeutxo_hash(cli, tmp_path):
    blocks = create_block_chain(PINNED_HEIGHT)
    assert blocks[-1][0] == PINNED_BLOCK, "the rebuilt chain is not Core's (block hash at 200)"
    bdir = tmp_path / "blocks"
    bdir.mkdir()
    with open(bdir / "blk00000.dat", "wb") as f:
        for _, raw in blocks:
            f.write(REGTEST_MAGIC + struct.pack("<I", len(raw)) + raw)
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
