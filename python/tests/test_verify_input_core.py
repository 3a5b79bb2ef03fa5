"""Per-input differential of ibdkit.verify_input against Bitcoin Core's engine
(btck_script_pubkey_verify through py-bitcoinkernel): every sampled input of Core's regtest chain,
of a signed generated chain (P2PKH, P2WPKH, P2TR key path, multisig in P2SH and P2WSH, tapscript)
and of mainnet block 866,342 gets the same verdict from both, as do four mutants of it: a flipped
bit inside its signature, a wrong amount, a wrong spent script and a dropped witness item, all under
the flags of its block. The spent outputs come from walking the chain (866,342: its
spent_utxos.json). Inputs are sampled (seed printed; IBDKIT_TEST_SEED replays it) to bound the time.

Core's C API answers valid or not (no ScriptError), so the verdicts compared are ok/not ok; where
both fail, ibdkit's reason must be a block-script-verify-flag-failed one.
"""
import hashlib
import json
import os
import random
import struct

import pytest

from conftest import DATA, import_ibdkit, import_pbk, run_cli  # noqa: E402

pbk = import_pbk()

from test_block_differential import parse_block  # noqa: E402
from test_gen_chain_core import read_records  # noqa: E402
from test_replay_differential import _records  # noqa: E402

ibdkit = import_ibdkit()

SEED = int(os.environ.get("IBDKIT_TEST_SEED", random.randrange(1 << 32)))
SAMPLE = {"regtest": 400, "signed": 600, "mainnet": 400}  # inputs per source (all if fewer)
START = 1_700_000_000


def pushes(script):
    """The data pushes of a scriptSig (stops at the first non-push opcode)."""
    out, i = [], 0
    while i < len(script):
        op = script[i]
        i += 1
        if 1 <= op <= 75:
            n = op
        elif op == 76:
            n, i = script[i], i + 1
        elif op == 77:
            n, i = struct.unpack_from("<H", script, i)[0], i + 2
        elif op == 78:
            n, i = struct.unpack_from("<I", script, i)[0], i + 4
        else:
            continue
        out.append((i, n))
        i += n
    return out


def copy(tx):
    m = tx.copy()
    m.raw = None  # serialized again: it is a mutant
    return m


def flip_signature(tx, k, rng):
    """A copy of tx with one bit flipped inside a signature of input k (a witness item or scriptSig
    push of 64..73 bytes: Schnorr or DER), or None when the input carries none."""
    m = copy(tx)
    for j, item in enumerate(m.wit[k]):
        if 64 <= len(item) <= 73:
            b = bytearray(item)
            b[rng.randrange(5, 32)] ^= 1 << rng.randrange(8)
            m.wit[k][j] = bytes(b)
            return m
    script = m.vin[k][1]
    for pos, n in pushes(script):
        if 64 <= n <= 73:
            b = bytearray(script)
            b[pos + rng.randrange(5, 32)] ^= 1 << rng.randrange(8)
            m.vin[k][1] = bytes(b)
            return m
    return None


class CoreObjects:
    """pbk's Transaction and TransactionOutput objects, made once per serialization and per output:
    building them is most of the test's time on transactions with hundreds of inputs."""

    def __init__(self):
        self.tx_raw, self.tx, self.outs = None, None, {}

    def transaction(self, raw):
        if raw != self.tx_raw:
            self.tx_raw, self.tx = raw, pbk.Transaction(raw)
        return self.tx

    def output(self, value, spk):
        if (value, spk) not in self.outs:
            if len(self.outs) > 50_000:
                self.outs.clear()
            self.outs[value, spk] = pbk.TransactionOutput(pbk.ScriptPubkey(spk), value)
        return self.outs[value, spk]


CORE = CoreObjects()


def core_ok(raw, k, spent, flags):
    tx = CORE.transaction(raw)
    txdata = pbk.script.PrecomputedTransactionData(tx, [CORE.output(v, s) for v, s in spent])
    value, spk = spent[k]
    return pbk.ScriptPubkey(spk).verify(value, tx, txdata, k, pbk.ScriptVerificationFlags(flags))


def serialized(tx):
    if getattr(tx, "raw", None) is None:
        tx.raw = tx.ser()
    return tx.raw


def compare(tx, k, spent, flags, what, counts):
    raw = serialized(tx)
    core = core_ok(raw, k, spent, flags)
    ours = ibdkit.verify_input(raw, k, spent, flags=flags)
    assert ours.ok == core, (f"seed {SEED}: {what}: Core {'accepts' if core else 'rejects'}, ibdkit says "
                             f"{ours.error_name} ({ours.error}); tx {raw.hex()} input {k} spent {spent} "
                             f"flags {ibdkit.format_script_flags(flags)}")
    assert ours.ok or ours.reason.startswith("block-script-verify-flag-failed ("), ours.reason
    counts[what, core] = counts.get((what, core), 0) + 1
    return core


def check_input(tx, k, spent, flags, rng, counts):
    """The input, then its mutants, against Core's engine; the unmutated input must pass."""
    assert compare(tx, k, spent, flags, "input", counts), f"seed {SEED}: a valid chain's input fails"
    m = flip_signature(tx, k, rng)
    if m is not None:
        compare(m, k, spent, flags, "flipped signature bit", counts)
    wrong = list(spent)
    wrong[k] = (spent[k][0] + rng.choice((1, -1 if spent[k][0] > 0 else 1, 1000)), spent[k][1])
    compare(tx, k, wrong, flags, "wrong amount", counts)
    spk = bytearray(spent[k][1])
    if spk:
        spk[rng.randrange(len(spk))] ^= 1 << rng.randrange(8)
        wrong = list(spent)
        wrong[k] = (spent[k][0], bytes(spk))
        compare(tx, k, wrong, flags, "wrong spent script", counts)
    if tx.wit[k]:
        m = copy(tx)
        del m.wit[k][rng.randrange(len(m.wit[k]))]
        compare(m, k, spent, flags, "dropped witness item", counts)


def chain_inputs(records, network, first_height):
    """(tx, input, spent outputs, flags) of every non-coinbase input, walking the chain's UTXO set."""
    utxos, out = {}, []
    for h, raw in enumerate(records, start=first_height):
        _, txs = parse_block(raw)
        block_hash = hashlib.sha256(hashlib.sha256(raw[:80]).digest()).digest()[::-1].hex()
        flags = ibdkit.parse_script_flags(ibdkit.block_script_flags(network, h, block_hash))
        for t, tx in enumerate(txs):
            if t > 0:
                spent = [utxos.pop(bytes(p)) for p, _, _ in tx.vin]
                out.extend((tx, k, spent, flags) for k in range(len(tx.vin)))
            txid = tx.txid()
            for n, (v, s) in enumerate(tx.vout):
                utxos[txid + struct.pack("<I", n)] = (v, bytes(s))
    return out


def run(inputs, source, counts):
    rng = random.Random(f"{SEED}-{source}")
    sample = inputs if len(inputs) <= SAMPLE[source] else rng.sample(inputs, SAMPLE[source])
    sample.sort(key=lambda x: id(x[0]))  # a transaction's inputs together: its pbk objects are reused
    for tx, k, spent, flags in sample:
        check_input(tx, k, spent, flags, rng, counts)
    print(f"{source}: seed {SEED}, {len(sample)} of {len(inputs)} inputs; verdicts (mutant, Core ok): "
          f"{dict(sorted(counts.items()))}")
    return len(sample)


def test_cores_regtest_chain_per_input():
    records = _records(DATA / "regtest" / "core_kernel_blocks_1-206.blk")
    inputs = chain_inputs(records, "regtest", 1)
    counts = {}
    assert run(inputs, "regtest", counts) > 0
    assert counts.get(("wrong spent script", False), 0) > 0


def test_signed_generated_chain_per_input(cli, tmp_path):
    out = tmp_path / "chain"
    r = run_cli(cli, "gen-chain", "--out", out, "--blocks", "200", "--target-mb", "4", "--seed", "9",
                "--start-time", str(START), "--signed", "--no-progress", "--json")
    summary = json.loads(r.stdout)
    assert summary["signed"] is True
    records = read_records(out / "blocks")
    if records[0][4:36] == bytes(32):
        records = records[1:]  # the genesis block
    assert len(records) == 200
    inputs = chain_inputs(records, "regtest", 1)
    assert len(inputs) == summary["signed_inputs"]["total"]
    counts = {}
    run(inputs, "signed", counts)
    # Every kind of failure showed up on both sides.
    for what in ("flipped signature bit", "wrong amount", "wrong spent script", "dropped witness item"):
        assert counts.get((what, False), 0) > 0, what
    # Block.verify_scripts: every block passes with the walked spent outputs, in block order.
    walked = iter(inputs)
    for height, raw in enumerate(records, start=1):
        n = sum(len(tx.vin) for tx in parse_block(raw)[1][1:])
        spent = [outs[i] for _, i, outs, _ in (next(walked) for _ in range(n))]
        assert ibdkit.decode_block(raw, "regtest").verify_scripts(spent, height=height) == [], f"block {height}"
    assert next(walked, None) is None


def test_mainnet_block_866342_per_input():
    raw = (DATA / "mainnet" / "blocks" / "block_866342.raw").read_bytes()
    spent_json = json.loads((DATA / "mainnet" / "blocks" / "block_866342.spent_utxos.json").read_text())
    pairs = [(e["txout"]["value"], bytes.fromhex(e["txout"]["script_pubkey"])) for e in spent_json]
    block = ibdkit.decode_block(raw)
    flags = ibdkit.parse_script_flags(ibdkit.block_script_flags("main", 866342, block.hash))
    _, txs = parse_block(raw)
    inputs, next_ = [], 0
    for tx in txs[1:]:
        spent = pairs[next_:next_ + len(tx.vin)]
        inputs.extend((tx, k, spent, flags) for k in range(len(tx.vin)))
        next_ += len(tx.vin)
    assert next_ == len(pairs)
    counts = {}
    run(inputs, "mainnet", counts)
    assert counts.get(("flipped signature bit", False), 0) > 0

