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
from chain_model import compact_size, connect_block, core_transactions, sha256d  # noqa: E402

EMPTY_HASH = "56944c5d3f98413ef45cf54545538103cc9f298e0575820ad3591376e2e0f65d"
EMPTY_MUHASH = "dd5ad2a105c2d29495f577245c357409002329b9f4d6182c0af3dc2f462555c8"
MUHASH_PRIME = 2**3072 - 1103717


def _chacha20_block(key, counter):
    """RFC 8439 block function, zero nonce (an independent implementation for the MuHash check)."""
    def rotl(v, c):
        return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))

    def qr(x, a, b, c, d):
        x[a] = (x[a] + x[b]) & 0xFFFFFFFF; x[d] = rotl(x[d] ^ x[a], 16)
        x[c] = (x[c] + x[d]) & 0xFFFFFFFF; x[b] = rotl(x[b] ^ x[c], 12)
        x[a] = (x[a] + x[b]) & 0xFFFFFFFF; x[d] = rotl(x[d] ^ x[a], 8)
        x[c] = (x[c] + x[d]) & 0xFFFFFFFF; x[b] = rotl(x[b] ^ x[c], 7)

    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *struct.unpack("<8I", key), counter, 0, 0, 0]
    x = list(state)
    for _ in range(10):
        qr(x, 0, 4, 8, 12); qr(x, 1, 5, 9, 13); qr(x, 2, 6, 10, 14); qr(x, 3, 7, 11, 15)
        qr(x, 0, 5, 10, 15); qr(x, 1, 6, 11, 12); qr(x, 2, 7, 8, 13); qr(x, 3, 4, 9, 14)
    return struct.pack("<16I", *[(a + b) & 0xFFFFFFFF for a, b in zip(x, state)])


def muhash(elements):
    """Core's MuHash3072 over byte strings, finalized and printed as gettxoutsetinfo does."""
    acc = 1
    for e in elements:
        key = hashlib.sha256(e).digest()
        stream = b"".join(_chacha20_block(key, i) for i in range(6))
        acc = acc * int.from_bytes(stream, "little") % MUHASH_PRIME
    return hashlib.sha256(acc.to_bytes(384, "little")).digest()[::-1].hex()


def script_type(script):
    """Core's Solver, type only (independent of ibdkit's classifier), as ibdkit's breakdown labels."""
    n = len(script)
    if n == 23 and script[0] == 0xA9 and script[1] == 20 and script[22] == 0x87:
        return "P2SH"
    if 4 <= n <= 42 and (script[0] == 0 or 0x51 <= script[0] <= 0x60) and script[1] + 2 == n:
        v = 0 if script[0] == 0 else script[0] - 0x50
        prog = script[2:]
        if v == 0 and len(prog) == 20:
            return "P2WPKH"
        if v == 0 and len(prog) == 32:
            return "P2WSH"
        if v == 1 and len(prog) == 32:
            return "P2TR"
        if v == 1 and prog == b"\x4e\x73":
            return "P2A"
        return "witness_unknown" if v != 0 else "nonstandard"
    if (n == 35 and script[0] == 33 and script[34] == 0xAC and script[1] in (2, 3)) or \
       (n == 67 and script[0] == 65 and script[66] == 0xAC and script[1] in (4, 6, 7)):
        return "P2PK"
    if n == 25 and script[:3] == b"\x76\xa9\x14" and script[23:] == b"\x88\xac":
        return "P2PKH"
    if n >= 3 and script[-1] == 0xAE and 0x51 <= script[0] <= 0x60 and 0x51 <= script[-2] <= 0x60:
        i, keys = 1, 0
        while i < n - 2 and script[i] in (33, 65) and i + 1 + script[i] <= n - 2:
            i += 1 + script[i]
            keys += 1
        if i == n - 2 and keys == script[-2] - 0x50 and script[0] <= script[-2]:
            return "bare_multisig"
    return "nonstandard"


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
        connect_block(utxo, h, core_transactions(block))
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
    elements = []
    by_type = {}
    for (txid, n), (h, cb, value, script) in utxo.items():
        elements.append(txid + struct.pack("<I", n) + struct.pack("<I", h * 2 + int(cb)) +
                        struct.pack("<q", value) + compact_size(len(script)) + script)
        t = by_type.setdefault(script_type(script), [0, 0])
        t[0] += 1
        t[1] += value
    return {
        "muhash": muhash(elements),
        "by_type": by_type,
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
    height, tip, utxo = build_chainstate(datadir, pbk.ChainType.REGTEST, [blk])
    return datadir / "chainstate", height, tip, utxo


@pytest.fixture(scope="module")
def mainnet_chainstate(tmp_path_factory, shared):
    datadir = tmp_path_factory.mktemp("core_mainnet")
    files = [shared / "mainnet" / "blk_0-599" / f for f in ("blk00000.dat", "blk00001.dat")]
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
    # MuHash (against an independent Python MuHash3072) and the script-type breakdown.
    got_mu = stats_json(cli, chainstate, "--hash-type", "muhash")
    assert got_mu["muhash"] == exp["muhash"]
    assert "hash_serialized_3" not in got_mu
    both = stats_json(cli, chainstate, "--hash-type", "both")
    assert (both["muhash"], both["hash_serialized_3"]) == (exp["muhash"], exp["hash_serialized_3"])
    assert "muhash" not in got and "hash_serialized_3" not in stats_json(cli, chainstate, "--hash-type", "none")
    assert got["script_types_add_up"] is True
    nonzero = {k: [v["count"], v["amount_sat"]] for k, v in got["script_types"].items() if v["count"]}
    assert nonzero == exp["by_type"]
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
        assert (r["height"], r["coinbase"], r["value"], r["script_pubkey"]) == (h, cb, value, script.hex())
        if r["script_type"] in ("witness_v0_keyhash", "witness_v0_scripthash", "witness_v1_taproot"):
            assert r["address"].startswith("bcrt1")
        if r["script_type"] == "pubkeyhash":
            assert r["address"][0] in "mn"
    csv_path = tmp_path / "dump.csv"
    r = run_cli(cli, "utxo", "dump", "--chainstate", chainstate, "--format", "csv", "--out", csv_path,
                "--network", "regtest")
    exp = expected_stats(utxo)
    assert f"hash_serialized_3 {exp['hash_serialized_3']} equal to the chainstate's" in r.stderr
    csv = csv_path.read_text().splitlines()
    assert csv[0] == "txid,vout,height,coinbase,value,script_type,address,script_pubkey"
    assert len(csv) == len(utxo) + 1
    for line in csv[1:]:
        txid, vout, h, cb, value, typ, addr, script = line.split(",")
        assert (int(h), cb == "1", int(value), script) == \
            (utxo[(bytes.fromhex(txid)[::-1], int(vout))][0], *utxo[(bytes.fromhex(txid)[::-1], int(vout))][1:3],
             utxo[(bytes.fromhex(txid)[::-1], int(vout))][3].hex())
    # SQLite: same rows; the meta table carries the chainstate's figures.
    import sqlite3
    db_path = tmp_path / "dump.sqlite"
    run_cli(cli, "utxo", "dump", "--chainstate", chainstate, "--format", "sqlite", "--out", db_path,
            "--network", "regtest")
    con = sqlite3.connect(db_path)
    assert con.execute("SELECT count(*), sum(value) FROM utxo").fetchone() == (len(utxo), exp["total_amount_sat"])
    meta = dict(con.execute("SELECT key, value FROM meta"))
    assert meta["hash_serialized_3"] == exp["hash_serialized_3"]
    for txid, vout, h, cb, value, script in con.execute(
            "SELECT txid, vout, height, coinbase, value, script_pubkey FROM utxo"):
        assert (h, bool(cb), value, bytes(script)) == utxo[(bytes.fromhex(txid)[::-1], vout)]
    con.close()


def test_mainnet_dump_p2pk_and_known_address(cli, mainnet_chainstate, tmp_path):
    chainstate = mainnet_chainstate[0]
    out = tmp_path / "m.jsonl"
    run_cli(cli, "utxo", "dump", "--chainstate", chainstate, "--format", "jsonl", "--out", out)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    # Early coinbases pay to uncompressed P2PK (stored as compressed type 4/5, decompressed with
    # libsecp256k1 on read): the scripts must be 67 bytes, 41 04 ... ac.
    p2pk = [r for r in rows if r["script_type"] == "pubkey"]
    assert len(p2pk) >= 590
    assert all(len(r["script_pubkey"]) == 134 and r["script_pubkey"].startswith("4104") and r["script_pubkey"].endswith("ac") for r in p2pk)


def test_locked_chainstate_is_read_from_a_snapshot(cli, tmp_path):
    datadir = tmp_path / "locked"
    cm = pbk.load_chainman(datadir, pbk.ChainType.REGTEST)
    try:
        # Opening and closing LOCK in this process would drop the engine's fcntl lock on it: stat only.
        def fingerprint():
            return {p.name: (p.stat().st_size, p.stat().st_mtime_ns,
                             p.name == "LOCK" or hashlib.sha256(p.read_bytes()).hexdigest())
                    for p in (datadir / "chainstate").iterdir()}
        before = fingerprint()
        got = json.loads(run_cli(cli, "utxo", "stats", "--json", "--chainstate", datadir / "chainstate").stdout)
        assert got["txouts"] == 0 and got["hash_serialized_3"] == EMPTY_HASH
        assert fingerprint() == before, "nothing changed in Core's locked chainstate"
        r = run_cli(cli, "utxo", "stats", "--chainstate", datadir / "chainstate")
        assert "bitcoind is running: reading a snapshot of its chainstate" in r.stderr
    finally:
        del cm
    # After the manager is gone, the empty set's hashes are the known constants.
    got = stats_json(cli, datadir / "chainstate", "--hash-type", "both")
    assert got["txouts"] == 0
    assert got["hash_serialized_3"] == EMPTY_HASH
    assert got["muhash"] == EMPTY_MUHASH
    assert got["hash_serialized_3"] == EMPTY_HASH


def test_snapshot_round_trip_on_core_chainstate(cli, regtest_chainstate, tmp_path):
    """Snapshot of Core's chainstate: layout per dumptxoutset (rebuilt here from the expected set),
    load it back into a new chainstate, snapshot again: same bytes, same hash."""
    chainstate, height, tip, utxo = regtest_chainstate
    snap = tmp_path / "a.snap"
    r = run_cli(cli, "utxo", "snapshot", "--chainstate", chainstate, "--out", snap, "--network", "regtest",
                "--no-progress")
    assert "verified" in r.stdout
    exp = expected_stats(utxo)

    def varint(n):
        out = [n & 0x7F]
        while n > 0x7F:
            n = (n >> 7) - 1
            out.insert(0, (n & 0x7F) | 0x80)
        return bytes(out)

    def compress_amount(n):
        if n == 0:
            return 0
        e = 0
        while n % 10 == 0 and e < 9:
            n //= 10
            e += 1
        if e < 9:
            d = n % 10
            n //= 10
            return 1 + (n * 9 + d - 1) * 10 + e
        return 1 + (n - 1) * 10 + 9

    def compress_script(s):
        if len(s) == 25 and s[:3] == b"\x76\xa9\x14" and s[23:] == b"\x88\xac":
            return b"\x00" + s[3:23]
        if len(s) == 23 and s[:2] == b"\xa9\x14" and s[22] == 0x87:
            return b"\x01" + s[2:22]
        if len(s) == 35 and s[0] == 33 and s[34] == 0xAC and s[1] in (2, 3):
            return s[1:34]
        if len(s) == 67 and s[0] == 65 and s[66] == 0xAC and s[1] == 4:
            return bytes([4 | (s[65] & 1)]) + s[2:34]  # valid points only: Core's chains have no others
        return varint(len(s) + 6) + s

    groups = {}
    for (txid, n), v in utxo.items():
        groups.setdefault(txid, []).append((varint(n), n, v))
    body = bytearray(b"utxo\xff\x02\x00\xfa\xbf\xb5\xda" + bytes.fromhex(tip)[::-1] + struct.pack("<Q", len(utxo)))
    for txid in sorted(groups):
        body += txid + compact_size(len(groups[txid]))
        for _, n, (h, cb, value, script) in sorted(groups[txid]):
            body += compact_size(n) + varint(h * 2 + int(cb)) + varint(compress_amount(value)) + compress_script(script)
    assert snap.read_bytes() == bytes(body)

    new = tmp_path / "cs2"
    r = run_cli(cli, "utxo", "load-snapshot", snap, "--chainstate", new, "--network", "regtest",
                "--expect-hash", exp["hash_serialized_3"], "--no-progress")
    assert exp["hash_serialized_3"] + " (verified)" in r.stdout
    got = stats_json(cli, new)
    assert (got["bestblock"], got["hash_serialized_3"], got["txouts"]) == (tip, exp["hash_serialized_3"], len(utxo))
    snap2 = tmp_path / "b.snap"
    run_cli(cli, "utxo", "snapshot", "--chainstate", new, "--out", snap2, "--network", "regtest", "--no-progress")
    assert snap2.read_bytes() == snap.read_bytes()
    # Wrong network and a lying hash are refused; nothing is left behind.
    bad = run_cli(cli, "utxo", "load-snapshot", snap, "--chainstate", tmp_path / "cs3", "--network", "main", check=False)
    assert bad.returncode != 0 and "does not match the network of this node (main)" in bad.stderr
    bad = run_cli(cli, "utxo", "load-snapshot", snap, "--chainstate", tmp_path / "cs3", "--network", "regtest",
                  "--expect-hash", EMPTY_HASH, check=False)
    assert bad.returncode != 0 and "Bad snapshot content hash" in bad.stderr
    assert not (tmp_path / "cs3").exists()


def test_utxo_get_matches_core_coins(cli, regtest_chainstate):
    chainstate, _, _, utxo = regtest_chainstate
    for (txid, n), (h, cb, value, script) in list(sorted(utxo.items()))[:25]:
        got = json.loads(run_cli(cli, "utxo", "get", "--chainstate", chainstate, f"{txid[::-1].hex()}:{n}",
                                 "--network", "regtest", "--json").stdout)
        assert (got["height"], got["coinbase"], got["amount_sat"], got["scriptPubKey"]["hex"]) == \
            (h, cb, value, script.hex())
    txid = next(iter(utxo))[0]
    r = run_cli(cli, "utxo", "get", "--chainstate", chainstate, f"{txid[::-1].hex()}:4000000", check=False)
    assert r.returncode == 1 and "not in the UTXO set" in r.stdout
