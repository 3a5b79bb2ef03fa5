"""Differential tests: `ibdkit utxo stats/dump` on chainstates written by Bitcoin Core's engine.

Core's engine (py-bitcoinkernel) imports real block files into a temporary datadir; destroying the
ChainstateManager flushes the coins cache into `<datadir>/chainstate` (Core's LevelDB format,
obfuscated). pbk does not expose gettxoutsetinfo, so the expected UTXO set is rebuilt
independently in Python from the blocks of Core's active chain (read back through Core's block
index), and hash_serialized_3 is computed from it per kernel/coinstats.cpp.
"""
import hashlib
import json
import pathlib
import struct

import pytest

from conftest import import_pbk  # noqa: E402

pbk = import_pbk()

from conftest import run_cli  # noqa: E402

EMPTY_HASH = "56944c5d3f98413ef45cf54545538103cc9f298e0575820ad3591376e2e0f65d"


def sha256d(b):
    return hashlib.sha256(hashlib.sha256(b).digest()).digest()


def compact_size(n):
    if n < 253:
        return bytes([n])
    if n <= 0xFFFF:
        return b"\xfd" + struct.pack("<H", n)
    if n <= 0xFFFFFFFF:
        return b"\xfe" + struct.pack("<I", n)
    return b"\xff" + struct.pack("<Q", n)


def build_chainstate(datadir, chain_type, block_files):
    """Imports block files with Core's engine; returns (tip height, tip hash hex, expected utxo map)."""
    cm = pbk.load_chainman(datadir, chain_type)
    status = cm.import_blocks([pathlib.Path(p) for p in block_files])
    assert status in (0, True), f"import_blocks failed: {status}"
    chain = cm.get_active_chain()
    height = chain.height
    utxo = {}
    tip_hash = None
    for h in range(1, height + 1):  # the genesis outputs are never in the UTXO set
        entry = chain._get_by_height(h)
        block = cm.blocks[entry]
        if h == height:
            tip_hash = bytes(entry.block_hash)[::-1].hex()
        for i, tx in enumerate(block.transactions):
            txid = bytes(tx.txid)
            if i > 0:
                for txin in tx.inputs:
                    op = txin.out_point
                    del utxo[(bytes(op.txid), op.index)]
            for n, out in enumerate(tx.outputs):
                script = bytes(out.script_pubkey)
                if (len(script) > 0 and script[0] == 0x6A) or len(script) > 10000:
                    continue  # unspendable: never added (Core's AddCoin)
                utxo[(txid, n)] = (h, i == 0, out.amount, script)
        del block, entry
    del chain
    del cm  # flushes the chainstate
    return height, tip_hash, utxo


def expected_stats(utxo):
    ser = bytearray()
    txids = set()
    total = 0
    bogo = 0
    for (txid, n), (h, cb, value, script) in sorted(utxo.items()):
        ser += txid + struct.pack("<I", n) + struct.pack("<I", h * 2 + int(cb))
        ser += struct.pack("<q", value) + compact_size(len(script)) + script
        txids.add(txid)
        total += value
        bogo += 50 + len(script)
    return {
        "txouts": len(utxo),
        "transactions": len(txids),
        "total_amount_sat": total,
        "bogosize": bogo,
        "hash_serialized_3": sha256d(bytes(ser))[::-1].hex(),
    }


def dir_fingerprint(d):
    out = {}
    for p in sorted(pathlib.Path(d).iterdir()):
        st = p.stat()
        out[p.name] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size)
    return out


@pytest.fixture(scope="module")
def regtest_chainstate(tmp_path_factory, shared):
    datadir = tmp_path_factory.mktemp("core_regtest")
    blk = shared / "regtest" / "core_kernel_blocks_1-206.blk"
    if not blk.exists():
        pytest.skip("regtest block file not present")
    height, tip, utxo = build_chainstate(datadir, pbk.ChainType.REGTEST, [blk])
    return datadir / "chainstate", height, tip, utxo


@pytest.fixture(scope="module")
def mainnet_chainstate(tmp_path_factory, shared):
    datadir = tmp_path_factory.mktemp("core_mainnet")
    files = [shared / "mainnet" / "blk_0-599" / f for f in ("blk00000.dat", "blk00001.dat")]
    if not all(f.exists() for f in files):
        pytest.skip("mainnet block files not present")
    height, tip, utxo = build_chainstate(datadir, pbk.ChainType.MAINNET, files)
    return datadir / "chainstate", height, tip, utxo


def stats_json(cli, chainstate, *extra):
    r = run_cli(cli, "utxo", "stats", "--chainstate", chainstate, "--json", *extra)
    return json.loads(r.stdout)


@pytest.mark.parametrize("which", ["regtest_chainstate", "mainnet_chainstate"])
def test_utxo_stats_match_core(cli, request, which):
    chainstate, height, tip, utxo = request.getfixturevalue(which)
    before = dir_fingerprint(chainstate)
    got = stats_json(cli, chainstate)
    exp = expected_stats(utxo)
    assert got["bestblock"] == tip
    assert got["height"] == height
    assert got["txouts"] == exp["txouts"]
    assert got["transactions"] == exp["transactions"]
    assert got["total_amount_sat"] == exp["total_amount_sat"]
    assert got["bogosize"] == exp["bogosize"]
    assert got["hash_serialized_3"] == exp["hash_serialized_3"]
    # Read-only: Core's directory is byte-identical (and untouched) afterwards.
    assert dir_fingerprint(chainstate) == before
    for k in ("height", "bestblock", "txouts", "transactions", "bogosize", "total_amount", "hash_serialized_3"):
        assert k in got


def test_mainnet_0_599_known_facts(cli, mainnet_chainstate):
    chainstate, height, tip, utxo = mainnet_chainstate
    assert height == 599
    got = stats_json(cli, chainstate)
    # No spends in the first 600 blocks except a few; every coinbase pays 50 BTC (blocks 1..599).
    assert got["total_amount_sat"] == 599 * 50 * 10**8
    assert json.loads(run_cli(cli, "utxo", "stats", "--chainstate", chainstate, "--json").stdout)[
        "total_amount"] == 29950.0


def test_policies_agree(cli, regtest_chainstate):
    chainstate = regtest_chainstate[0]
    hashes = {
        stats_json(cli, chainstate, "--policy", p)["hash_serialized_3"]
        for p in ("plain", "zero-after-free", "barrier-only", "secure", "hardened")
    }
    assert len(hashes) == 1


def test_dump_matches_core_coins(cli, regtest_chainstate, tmp_path):
    chainstate, _, _, utxo = regtest_chainstate
    out = tmp_path / "dump.jsonl"
    run_cli(cli, "utxo", "dump", "--chainstate", chainstate, "--format", "jsonl", "--out", out, "--network", "regtest")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(utxo)
    for r in rows:
        key = (bytes.fromhex(r["txid"])[::-1], r["vout"])
        h, cb, value, script = utxo[key]
        assert (r["height"], r["coinbase"], r["amount"], r["script"]) == (h, cb, value, script.hex())
        if r["type"] in ("witness_v0_keyhash", "witness_v0_scripthash", "witness_v1_taproot"):
            assert r["address"].startswith("bcrt1")
        if r["type"] == "pubkeyhash":
            assert r["address"][0] in "mn"
    csv = run_cli(cli, "utxo", "dump", "--chainstate", chainstate, "--format", "csv").stdout.splitlines()
    assert csv[0] == "txid,vout,height,coinbase,amount,script,type,address"
    assert len(csv) == len(utxo) + 1


def test_mainnet_dump_p2pk_and_known_address(cli, mainnet_chainstate):
    chainstate = mainnet_chainstate[0]
    rows = [json.loads(x) for x in run_cli(cli, "utxo", "dump", "--chainstate", chainstate,
                                           "--format", "jsonl").stdout.splitlines()]
    # Early coinbases pay to uncompressed P2PK (stored as compressed type 4/5, decompressed with
    # libsecp256k1 on read): the scripts must be 67 bytes, 41 04 ... ac.
    p2pk = [r for r in rows if r["type"] == "pubkey"]
    assert len(p2pk) >= 590
    assert all(len(r["script"]) == 134 and r["script"].startswith("4104") and r["script"].endswith("ac") for r in p2pk)


def test_locked_chainstate_is_refused(cli, tmp_path):
    datadir = tmp_path / "locked"
    cm = pbk.load_chainman(datadir, pbk.ChainType.REGTEST)
    try:
        r = run_cli(cli, "utxo", "stats", "--chainstate", datadir / "chainstate", check=False)
        assert r.returncode != 0
        assert "is bitcoind running? stop it or copy the directory" in r.stderr
    finally:
        del cm
    # After the manager is gone, the empty set's hash is the known constant.
    got = stats_json(cli, datadir / "chainstate")
    assert got["txouts"] == 0
    assert got["hash_serialized_3"] == EMPTY_HASH
