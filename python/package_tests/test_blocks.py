"""ibdkit.read_blocks / decode_block / Block.check, against the CLI on the same bytes."""
import json
import random

import pytest

from conftest import run_cli

REGTEST_GENESIS = bytes.fromhex(
    "0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e"
    "67768f617fc81bc3888a51323a9fb8aa4b1e5e4adae5494dffff7f20020000000101000000010000000000000000000000"
    "000000000000000000000000000000000000000000ffffffff4d04ffff001d0104455468652054696d65732030332f4a61"
    "6e2f32303039204368616e63656c6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062"
    "616e6b73ffffffff0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f"
    "61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000")
REGTEST_GENESIS_HASH = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"


def test_network_subfolders_are_cores(ibdkit):
    """A path is read as a datadir when it holds a network's folder: Core's names, from the library's
    one table (the blocks a SwiftSync run caches are stamped by the same list)."""
    assert ibdkit._ibdkit.NETWORK_SUBFOLDERS == ("testnet3", "testnet4", "signet", "regtest")


def test_decode_genesis(ibdkit):
    b = ibdkit.decode_block(REGTEST_GENESIS, network="regtest")
    assert b.hash == REGTEST_GENESIS_HASH
    assert b.prev_hash == "00" * 32
    assert b.tx_count == len(b) == 1
    assert b.size == b.stripped_size == len(REGTEST_GENESIS) and b.weight == 4 * b.size
    assert b.check() is None
    (tx,) = b.transactions
    assert tx.txid == b.merkle_root == "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"
    assert tx.is_coinbase and not tx.has_witness and tx.wtxid == tx.txid
    assert tx.outputs[0].value == 50 * 100_000_000 and tx.outputs[0].script_type == "pubkey"
    assert tx.outputs[0].address is None
    assert tx.inputs[0].prevout_vout == 0xFFFFFFFF and tx.inputs[0].witness == []
    assert b.txids() == [tx.txid] and b.raw == REGTEST_GENESIS and tx.raw == REGTEST_GENESIS[81:]


def test_check_reject_reasons(ibdkit):
    bad_merkle = bytearray(REGTEST_GENESIS)
    bad_merkle[40] ^= 1
    b = ibdkit.decode_block(bytes(bad_merkle), network="regtest")
    assert b.check(pow=False) == "bad-txnmrklroot"
    assert b.check(pow=False, merkle=False) is None
    # On mainnet the regtest genesis does not meet the proof-of-work limit.
    assert ibdkit.decode_block(REGTEST_GENESIS, network="main").check() == "high-hash"


@pytest.mark.parametrize("cut", [0, 1, 79, 80, 81, 100, len(REGTEST_GENESIS) - 1])
def test_truncated_is_a_typed_error(ibdkit, cut):
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.decode_block(REGTEST_GENESIS[:cut])
    assert e.value.kind == "EndOfData" and e.value.message


def test_trailing_and_bad_arguments(ibdkit):
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.decode_block(REGTEST_GENESIS + b"\0")
    assert e.value.kind == "TrailingData"
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.decode_block(REGTEST_GENESIS, network="nonet")
    assert e.value.kind == "InvalidArgument"
    assert isinstance(e.value, Exception)


def test_random_and_mutated_bytes_never_crash(ibdkit):
    """Fuzz-style: random bytes, truncations and byte flips of real blocks give a Block or an Error."""
    rng = random.Random(1234)
    seeds = [REGTEST_GENESIS]
    decoded = failed = 0
    for i in range(3000):
        if i % 3 == 0:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 400)))
        else:
            data = bytearray(rng.choice(seeds))
            for _ in range(rng.randrange(1, 4)):
                data[rng.randrange(len(data))] = rng.getrandbits(8)
            data = bytes(data[: rng.randrange(len(data) + 1)]) if i % 3 == 1 else bytes(data)
        try:
            b = ibdkit.decode_block(data)
        except ibdkit.Error as e:
            assert e.kind in {"EndOfData", "TrailingData", "NonCanonicalCompactSize", "SizeTooLarge",
                              "SuperfluousWitness", "UnknownOptionalData", "InvalidValue"}, e.kind
            failed += 1
            continue
        decoded += 1
        # Every accessor works on whatever decoded.
        b.check()
        for tx in b:
            tx.txid, tx.wtxid, tx.weight, [o.script_type for o in tx.outputs], [i.witness for i in tx.inputs]
    assert failed > 0 and decoded > 0


def test_read_blocks_chain_order(ibdkit, chain, cli, tmp_path):
    reader = ibdkit.read_blocks(chain)
    assert reader.network == "regtest"
    assert len(reader) == 151
    blocks = list(reader)
    assert [b.height for b in blocks] == list(range(151))
    assert blocks[0].hash == REGTEST_GENESIS_HASH
    for prev, b in zip(blocks, blocks[1:]):
        assert b.prev_hash == prev.hash
    assert reader.scan["orphans"] == 0 and reader.scan["records"] == 151
    ntx = 0
    for b in blocks:
        txs = b.transactions
        ntx += len(txs)
        assert [t.txid for t in txs] == b.txids()
        assert 80 + len(b.raw) - b.size + sum(t.size for t in txs) >= b.size - 9
        assert b.check() is None
    assert ntx > 151
    # Same numbers as the CLI on a few blocks (with witness data).
    for b in blocks[100::10]:
        f = tmp_path / f"{b.height}.bin"
        f.write_bytes(b.raw)
        j = json.loads(run_cli(cli, "block", "check", f, "--network", "regtest", "--json"))
        assert (j["hash"], j["size"], j["strippedsize"], j["weight"], j["nTx"], j["valid"]) == \
               (b.hash, b.size, b.stripped_size, b.weight, b.tx_count, True)


def test_views_outlive_their_reader(ibdkit, chain):
    txs = []
    for b in ibdkit.read_blocks(chain):
        txs.extend(b.transactions[:2])
    del b
    seen = {tx.txid for tx in txs}
    assert len(seen) == len(txs)
    segwit = [tx for tx in txs if tx.has_witness]
    assert segwit and all(tx.weight < 4 * tx.size for tx in segwit)
    assert any(o.address for tx in txs for o in tx.outputs)
    assert all(o.address.startswith(("bcrt1", "m", "n", "2")) for tx in txs for o in tx.outputs if o.address)


def test_read_blocks_errors(ibdkit, tmp_path):
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.read_blocks(tmp_path)
    assert e.value.kind == "InvalidValue" and "blk" in str(e.value)
    (tmp_path / "blk00000.dat").write_bytes(b"\x01\x02\x03\x04" + bytes(100))
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.read_blocks(tmp_path)
    assert e.value.kind == "BadMagic"


def test_read_mainnet_block_files(ibdkit):
    """Mainnet heights 0-599 in Core's framing (tests/data): chain order, Core's hashes, checks pass."""
    import os
    import pathlib
    d = pathlib.Path(os.environ.get("IBDKIT_TEST_DATA", pathlib.Path(__file__).resolve().parents[2] / "tests" / "data"))
    d = d / "mainnet" / "blk_0-599"
    assert d.exists(), f"{d} is missing (the repository's test data, tests/data/README.md)"
    blocks = list(ibdkit.read_blocks(d))
    assert reader_len(ibdkit, d) == len(blocks) == 600
    assert blocks[0].hash == "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"
    assert blocks[0].network == "main" and blocks[-1].height == 599
    assert all(b.check() is None for b in blocks)
    assert sum(b.tx_count for b in blocks) >= 600


def reader_len(ibdkit, d):
    return len(ibdkit.read_blocks(d))


def test_decode_accepts_buffers(ibdkit):
    a = bytearray(REGTEST_GENESIS)
    b = ibdkit.decode_block(a, network="regtest")
    a[0] ^= 0xFF  # the block holds its own copy
    assert b.hash == REGTEST_GENESIS_HASH
    assert ibdkit.decode_block(memoryview(REGTEST_GENESIS)).hash == REGTEST_GENESIS_HASH


def test_read_blocks_without_genesis_record(ibdkit, cli, tmp_path):
    run_cli(cli, "gen-chain", "--preset", "tiny", "--out", tmp_path, "--no-genesis", "--no-progress")
    blocks = list(ibdkit.read_blocks(tmp_path))  # a datadir-like directory: its blocks/ is used
    assert len(blocks) == 150
    assert blocks[0].height == 1 and blocks[0].prev_hash == REGTEST_GENESIS_HASH
    assert blocks[-1].height == 150
