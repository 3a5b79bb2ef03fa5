"""Differential tests of `ibdkit block check` against Bitcoin Core's engine (py-bitcoinkernel).

Real blocks and >= 1000 mutated ones (flipped bytes, truncation, duplicated transactions, bad
merkle roots, oversize, missing/extra coinbase, duplicate inputs, bad amounts, sigops, PoW) must
get the same verdict from both: decodable or not, valid or not, and — where Core exposes it — the
same result category (the C API gives the BlockValidationResult, not the reason string).

Core's `pbk.Block(raw)` copies its input slowly, so the bulk of the mutations use the small blocks
of the block files; everything runs in one ibdkit process (`block check --lines`).
"""
import random
import struct

import pytest

from conftest import import_pbk  # noqa: E402

pbk = import_pbk()

from conftest import run_cli  # noqa: E402
from chain_model import compact_size, read_compact_size, sha256d  # noqa: E402

MAGICS = {b"\xf9\xbe\xb4\xd9": "main", b"\x0a\x03\xcf\x40": "signet", b"\xfa\xbf\xb5\xda": "regtest"}
CHAIN = {"main": pbk.ChainType.MAINNET, "signet": pbk.ChainType.SIGNET, "regtest": pbk.ChainType.REGTEST}
RESULT_NAMES = {"consensus": "CONSENSUS", "invalid-header": "INVALID_HEADER", "mutated": "MUTATED"}


# ---- a minimal block codec (enough to build mutations) ------------------------------------------

class Tx:
    def __init__(self, version=1, vin=None, vout=None, wit=None, locktime=0):
        self.version, self.vin, self.vout, self.locktime = version, vin or [], vout or [], locktime
        self.wit = wit or [[] for _ in self.vin]

    @staticmethod
    def parse(b, i):
        version = struct.unpack_from("<I", b, i)[0]
        i += 4
        n, i = read_compact_size(b, i)
        flag = 0
        if n == 0:
            flag = b[i]
            i += 1
            n, i = read_compact_size(b, i)
        vin = []
        for _ in range(n):
            prev = b[i:i + 36]
            i += 36
            ln, i = read_compact_size(b, i)
            script = b[i:i + ln]
            i += ln
            seq = struct.unpack_from("<I", b, i)[0]
            i += 4
            vin.append([prev, script, seq])
        m, i = read_compact_size(b, i)
        vout = []
        for _ in range(m):
            value = struct.unpack_from("<q", b, i)[0]
            i += 8
            ln, i = read_compact_size(b, i)
            vout.append([value, b[i:i + ln]])
            i += ln
        wit = [[] for _ in vin]
        if flag & 1:
            for k in range(n):
                cnt, i = read_compact_size(b, i)
                for _ in range(cnt):
                    ln, i = read_compact_size(b, i)
                    wit[k].append(b[i:i + ln])
                    i += ln
        locktime = struct.unpack_from("<I", b, i)[0]
        return Tx(version, vin, vout, wit, locktime), i + 4

    def has_witness(self):
        return any(self.wit)

    def ser(self, witness=True):
        w = witness and self.has_witness()
        out = struct.pack("<I", self.version) + (b"\x00\x01" if w else b"")
        out += compact_size(len(self.vin)) + b"".join(p + compact_size(len(s)) + s + struct.pack("<I", q) for p, s, q in self.vin)
        out += compact_size(len(self.vout)) + b"".join(struct.pack("<q", v) + compact_size(len(s)) + s for v, s in self.vout)
        if w:
            for st in self.wit:
                out += compact_size(len(st)) + b"".join(compact_size(len(x)) + x for x in st)
        return out + struct.pack("<I", self.locktime)

    def txid(self):
        return sha256d(self.ser(False))

    def copy(self):
        return Tx(self.version, [list(x) for x in self.vin], [list(x) for x in self.vout],
                  [list(s) for s in self.wit], self.locktime)


def parse_block(b):
    n, i = read_compact_size(b, 80)
    txs = []
    for _ in range(n):
        tx, i = Tx.parse(b, i)
        txs.append(tx)
    assert i == len(b)
    return bytearray(b[:80]), txs


def merkle(hashes):
    if not hashes:
        return b"\0" * 32
    while len(hashes) > 1:
        if len(hashes) % 2:
            hashes.append(hashes[-1])
        hashes = [sha256d(hashes[k] + hashes[k + 1]) for k in range(0, len(hashes), 2)]
    return hashes[0]


def ser_block(header, txs, fix_merkle=True):
    header = bytearray(header)
    if fix_merkle:
        header[36:68] = merkle([t.txid() for t in txs])
    return bytes(header) + compact_size(len(txs)) + b"".join(t.ser() for t in txs)


def block_file_records(path, limit=None):
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 8 <= len(data) and data[pos:pos + 4] in MAGICS:
        size = struct.unpack_from("<I", data, pos + 4)[0]
        out.append((MAGICS[data[pos:pos + 4]], data[pos + 8:pos + 8 + size]))
        pos += 8 + size
        if limit and len(out) >= limit:
            break
    return out


# ---- the two engines ----------------------------------------------------------------------------

_PARAMS = {}


def core_verdict(raw, network, pow_=True, merkle_=True):
    if network not in _PARAMS:
        _PARAMS[network] = pbk.ChainParameters(CHAIN[network])
    try:
        block = pbk.Block(raw)
    except Exception:  # Core could not deserialize
        return ("undecodable",)
    flags = pbk.BlockCheckFlags.BASE
    if pow_:
        flags |= pbk.BlockCheckFlags.POW
    if merkle_:
        flags |= pbk.BlockCheckFlags.MERKLE
    state = block.check(_PARAMS[network].consensus_params, flags)
    if state.validation_mode == pbk.ValidationMode.VALID:
        return ("valid",)
    return ("invalid", state.block_validation_result.name)


def ibdkit_verdicts(cli, tmp_path, cases):
    """cases: list of (raw, network, pow, merkle) -> list of (verdict tuple, reason)."""
    import json

    groups = {}
    for idx, (raw, network, pow_, merkle_) in enumerate(cases):
        groups.setdefault((network, pow_, merkle_), []).append(idx)
    out = [None] * len(cases)
    for (network, pow_, merkle_), idxs in groups.items():
        f = tmp_path / f"blocks_{network}_{int(pow_)}{int(merkle_)}.txt"
        f.write_text("".join(cases[i][0].hex() + "\n" for i in idxs))
        # --allow-trailing: decode as Core's C API does (bytes after the block are ignored), so the
        # verdicts compare exactly; strict decoding's TrailingData is tested separately.
        args = ["block", "check", f, "--lines", "--allow-trailing", "--network", network]
        if not pow_:
            args.append("--no-pow")
        if not merkle_:
            args.append("--no-merkle")
        lines = run_cli(cli, *args).stdout.splitlines()
        assert len(lines) == len(idxs)
        for i, line in zip(idxs, lines):
            j = json.loads(line)
            if not j["decoded"]:
                out[i] = (("undecodable",), j["error"])
            elif j["valid"]:
                out[i] = (("valid",), "")
            else:
                out[i] = (("invalid", RESULT_NAMES[j["result"]]), j["reject_reason"])
    return out


def compare(cli, tmp_path, cases, labels):
    ours = ibdkit_verdicts(cli, tmp_path, cases)
    mismatches = []
    for (raw, network, pow_, merkle_), (verdict, reason), label in zip(cases, ours, labels):
        theirs = core_verdict(raw, network, pow_, merkle_)
        if theirs != verdict:
            mismatches.append(f"{label}: core={theirs} ibdkit={verdict} {reason}")
    assert not mismatches, f"{len(mismatches)} divergences:\n" + "\n".join(mismatches[:20])
    return ours


# ---- tests ------------------------------------------------------------------------------------------

def small_blocks(shared):
    recs = []
    recs += block_file_records(shared / "mainnet/blk_0-599/blk00000.dat")
    recs += block_file_records(shared / "mainnet/blk_0-599/blk00001.dat")
    recs += block_file_records(shared / "signet/blk00000.dat")
    recs += block_file_records(shared / "regtest/core_kernel_blocks_1-206.blk")
    return recs


def test_real_blocks_same_verdict(cli, shared, tmp_path):
    cases, labels = [], []
    for name in ("block_413567.raw", "block_481829.raw", "block_866342.raw"):
        p = shared / "mainnet/blocks" / name
        if p.exists():
            cases.append((p.read_bytes(), "main", True, True))
            labels.append(name)
    for k, (net, raw) in enumerate(small_blocks(shared)):
        # With PoW on, signet blocks also have their solution checked (BIP 325), on both sides.
        cases.append((raw, net, True, True))
        labels.append(f"{net}#{k}")
    ours = compare(cli, tmp_path, cases, labels)
    assert all(v == ("valid",) for v, _ in ours)
    assert len(cases) > 800


def mutations(rng, net, raw):
    """Yields (label, raw, pow, merkle) mutations of one block."""
    header, txs = parse_block(raw)

    def build(new_txs, fix=True, hdr=None):
        return ser_block(hdr if hdr is not None else header, new_txs, fix)

    # Byte flips anywhere (header flips mostly break PoW; body flips mostly break decoding/merkle).
    for _ in range(3):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        yield "flip", bytes(b), rng.random() < 0.3, True
    # Truncation and trailing garbage.
    yield "truncate", raw[:rng.randrange(1, len(raw))], False, True
    yield "trailing", raw + b"\x00", False, True
    # Header only: PoW with a changed nonce (almost surely high-hash on mainnet/signet).
    h = bytearray(header)
    h[76] ^= 0x5A
    yield "nonce", build(txs, fix=False, hdr=h), True, True
    # Bad merkle root.
    h = bytearray(header)
    h[40] ^= 1
    yield "bad-merkle", build(txs, fix=False, hdr=h), False, True
    yield "bad-merkle-unchecked", build(txs, fix=False, hdr=h), False, False
    # Duplicated transactions: CVE-2012-2459 when the tail repeats, plain duplicates otherwise.
    yield "dup-last", build(txs + [txs[-1]]), False, True
    yield "dup-last-same-root", build(txs + [txs[-1]], fix=False), False, True
    yield "dup-all", build(txs + txs), False, True
    # Coinbase rules.
    yield "no-coinbase", build(txs[1:]), False, True
    cb2 = txs[0].copy()
    cb2.vin[0][1] = cb2.vin[0][1] + b"\x01"
    yield "two-coinbases", build(txs + [cb2]), False, True
    yield "empty-block", build([]), False, True
    cb = txs[0].copy()
    cb.vin[0][1] = b"\x51"
    yield "cb-short", build([cb] + txs[1:]), False, True
    cb = txs[0].copy()
    cb.vin[0][1] = bytes(101)
    yield "cb-long", build([cb] + txs[1:]), False, True
    cb = txs[0].copy()
    cb.vin[0][0] = bytes(32) + b"\x00\x00\x00\x00"  # prevout no longer null: not a coinbase
    yield "cb-not-null", build([cb] + txs[1:]), False, True
    # Amounts.
    for label, value in (("vout-negative", -1), ("vout-toolarge", 21_000_000 * 100_000_000 + 1)):
        cb = txs[0].copy()
        cb.vout[0][0] = value
        yield label, build([cb] + txs[1:]), False, True
    cb = txs[0].copy()
    cb.vout = [[21_000_000 * 100_000_000, b"\x51"], [1, b"\x51"]]
    yield "txouttotal-toolarge", build([cb] + txs[1:]), False, True
    cb = txs[0].copy()
    cb.vout = []
    yield "vout-empty", build([cb] + txs[1:]), False, True
    # A spending transaction with duplicate / null inputs, or none.
    spend = Tx(2, [[bytes([rng.randrange(1, 256)]) * 32 + b"\x00\x00\x00\x00", b"", 0xFFFFFFFF]],
               [[1000, b"\x51"]])
    dupe = spend.copy()
    dupe.vin.append(list(dupe.vin[0]))
    dupe.wit.append([])
    yield "inputs-duplicate", build(txs + [dupe]), False, True
    nul = spend.copy()
    nul.vin.append([bytes(32) + b"\xff\xff\xff\xff", b"", 0])
    nul.wit.append([])
    yield "prevout-null", build(txs + [nul]), False, True
    yield "spend-ok", build(txs + [spend]), False, True
    # Sigops: 20,001 legacy sigops in one output.
    sig = spend.copy()
    sig.vout[0][1] = b"\xae" * 1000 + b"\xac"
    yield "sigops", build(txs + [sig]), False, True
    sig2 = spend.copy()
    sig2.vout[0][1] = b"\xae" * 990
    yield "sigops-under", build(txs + [sig2]), False, True
    # Oversize: more than 1,000,000 stripped bytes.
    big = spend.copy()
    big.vout[0][1] = b"\x6a" * 1_000_001
    if rng.random() < 0.1:  # pbk copies slowly: only a few of these
        yield "oversize", build(txs + [big]), False, True


def test_mutated_blocks_same_verdict(cli, shared, tmp_path):
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    blocks = small_blocks(shared)
    rng.shuffle(blocks)
    cases, labels = [], []
    for net, raw in blocks[:80]:
        for label, mraw, pow_, merkle_ in mutations(rng, net, raw):
            cases.append((mraw, net, pow_, merkle_))
            labels.append(f"seed={seed} {net} {label}")
    assert len(cases) >= 1000
    ours = compare(cli, tmp_path, cases, labels)
    # The mutations really exercise the rules: several distinct reasons came out.
    reasons = {r for v, r in ours if v[0] == "invalid"}
    for want in ("bad-txnmrklroot", "bad-txns-duplicate", "bad-cb-missing", "bad-cb-multiple", "bad-blk-length",
                 "bad-txns-inputs-duplicate", "bad-txns-prevout-null", "bad-cb-length", "bad-blk-sigops",
                 "bad-txns-vout-negative", "bad-txns-vout-toolarge", "bad-txns-txouttotal-toolarge",
                 "bad-txns-vout-empty"):
        assert want in reasons, f"no mutation produced {want}"


def test_cli_check_and_decode(cli, shared, tmp_path):
    import json

    p = shared / "mainnet/blocks/block_413567.raw"
    r = run_cli(cli, "block", "check", p, "--json")
    j = json.loads(r.stdout)
    assert j["valid"] and j["hash"] == "0000000000000000025aff8be8a55df8f89c77296db6198f272d6577325d4069"
    assert j["nTx"] == 1557 and j["size"] == 999887 and j["bip34_height"] == 413567
    d = json.loads(run_cli(cli, "block", "decode", p).stdout)
    assert d["nTx"] == len(d["tx"]) == 1557
    assert d["merkleroot"] == d["merkleroot"].lower() and d["strippedsize"] == d["size"]
    cb = d["tx"][0]
    assert "coinbase" in cb["vin"][0]
    # Core's numbers: the coinbase pays subsidy + fees, printed in BTC.
    assert 25 < sum(o["value"] for o in cb["vout"]) < 27
    # A mutated block: exit 2 (an invalid block) with Core's reason; garbage: exit 1 with advice.
    raw = bytearray(p.read_bytes())
    raw[40] ^= 1
    bad = tmp_path / "bad.raw"
    bad.write_bytes(bytes(raw))
    r = run_cli(cli, "block", "check", bad, "--no-pow", check=False)
    assert r.returncode == 2 and "bad-txnmrklroot" in r.stdout
    junk = tmp_path / "junk.raw"
    junk.write_bytes(b"\xf9\xbe\xb4\xd9" + bytes(100))
    r = run_cli(cli, "block", "check", junk, check=False)
    assert r.returncode == 1 and "blk*.dat" in r.stderr and r.stderr.startswith("ibdkit: error: ")
