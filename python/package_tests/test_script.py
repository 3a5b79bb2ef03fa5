"""ibdkit.verify_input and Block.verify_scripts: mainnet block 866,342 (tests/data) with the outputs
its inputs spend, every input passing, and mutants failing with Core's strings and reject reasons.
The per-input differential against Core's engine is python/tests/test_verify_input_core.py."""
import json
import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "mainnet" / "blocks"
EVAL_FALSE = "Script evaluated without error but finished with a false/empty top stack element"
MODERN = "P2SH,DERSIG,NULLDUMMY,CHECKLOCKTIMEVERIFY,CHECKSEQUENCEVERIFY,WITNESS,TAPROOT"


@pytest.fixture(scope="module")
def block866342(ibdkit):
    block = ibdkit.decode_block((DATA / "block_866342.raw").read_bytes())
    spent = json.loads((DATA / "block_866342.spent_utxos.json").read_text())
    pairs = [(e["txout"]["value"], bytes.fromhex(e["txout"]["script_pubkey"])) for e in spent]
    per_tx, k = [], 0
    for tx in block.transactions[1:]:
        per_tx.append((tx, pairs[k:k + tx.input_count]))
        k += tx.input_count
    assert k == len(pairs)
    return block, spent, per_tx


def first_of_type(per_tx, script_type):
    for tx, outs in per_tx:
        for i, (value, spk) in enumerate(outs):
            if script_type(spk):
                return tx, i, outs
    pytest.fail("no such input")


def is_p2tr(spk):
    return len(spk) == 34 and spk[:2] == b"\x51\x20"


def is_p2wpkh(spk):
    return len(spk) == 22 and spk[:2] == b"\x00\x14"


def test_every_input_of_block_866342_verifies(ibdkit, block866342):
    block, spent, per_tx = block866342
    # The JSON's entries as they are, height from the coinbase (BIP34).
    assert block.verify_scripts(spent) == []
    assert block.verify_scripts(spent, height=866342, network="main") == []
    assert ibdkit.block_script_flags("main", 866342) == MODERN
    checked = 0
    for tx, outs in per_tx[:40]:
        for i in range(tx.input_count):
            v = ibdkit.verify_input(tx, i, outs, height=866342)
            assert v.ok and bool(v) and v.error_name == "OK" and v.error == "No error" and v.reason is None, v
            assert v.flags == MODERN
            checked += 1
    assert checked > 40


def test_inputs_as_bytes_objects_and_dicts(ibdkit, block866342):
    _, spent, per_tx = block866342
    tx, i, outs = first_of_type(per_tx, is_p2tr)
    as_objects = [type("O", (), {"value": v, "script_pubkey": s})() for v, s in outs]
    as_dicts = [{"value": v, "script_pubkey": s.hex()} for v, s in outs]
    for t in (tx, tx.raw, bytearray(tx.raw), memoryview(tx.raw)):
        for o in (outs, as_objects, as_dicts, [list(p) for p in outs]):
            assert ibdkit.verify_input(t, i, o).ok
    # The package's Output objects: the spending transaction's own outputs are not what it spends.
    assert ibdkit.verify_input(tx, i, outs, flags="P2SH,WITNESS,TAPROOT").ok
    assert ibdkit.verify_input(tx, i, outs, flags=ibdkit.parse_script_flags(MODERN)).ok


def test_mutants_fail_with_cores_strings(ibdkit, block866342):
    _, _, per_tx = block866342
    tx, i, outs = first_of_type(per_tx, is_p2wpkh)
    value, spk = outs[i]
    wrong_amount = list(outs)
    wrong_amount[i] = (value + 1, spk)
    v = ibdkit.verify_input(tx, i, wrong_amount)
    assert not v.ok and v.error_name == "EVAL_FALSE" and v.error == EVAL_FALSE
    assert v.reason == f"block-script-verify-flag-failed ({EVAL_FALSE})"
    wrong_script = list(outs)
    wrong_script[i] = (value, spk[:2] + b"\x01" * 20)
    assert ibdkit.verify_input(tx, i, wrong_script).error_name == "EQUALVERIFY"  # the key's hash
    # A zero program is a false top of stack before it is seen as a witness program (Core's order).
    wrong_script[i] = (value, spk[:2] + bytes(20))
    assert ibdkit.verify_input(tx, i, wrong_script).error_name == "EVAL_FALSE"
    # Without WITNESS the program is two pushes: a true top passes.
    assert ibdkit.verify_input(tx, i, outs, flags="P2SH").ok
    # Taproot key path: a wrong amount of any input changes the BIP341 digest.
    tx, i, outs = first_of_type(per_tx, is_p2tr)
    other = (i + 1) % len(outs) if len(outs) > 1 else i
    bad = list(outs)
    bad[other] = (outs[other][0] + 1, outs[other][1])
    assert ibdkit.verify_input(tx, i, bad).error_name == "SCHNORR_SIG"
    # Before taproot's flag, the same v1 program is not checked.
    assert ibdkit.verify_input(tx, i, bad, flags="P2SH,WITNESS").ok


def test_block_verify_scripts_reports_failing_inputs(ibdkit, block866342):
    block, spent, per_tx = block866342
    k = next(n for n, e in enumerate(spent) if is_p2wpkh(bytes.fromhex(e["txout"]["script_pubkey"])))
    bad = json.loads(json.dumps(spent))
    bad[k]["txout"]["value"] += 1
    failures = block.verify_scripts(bad)
    assert len(failures) == 1
    f = failures[0]
    assert f["block_input"] == k and f["error_name"] == "EVAL_FALSE"
    assert f["reason"] == f"block-script-verify-flag-failed ({EVAL_FALSE})"
    assert block.transactions[f["tx_index"]].txid == f["txid"]
    with pytest.raises(ibdkit.Error) as e:
        block.verify_scripts(spent[:-1])
    assert e.value.kind == "InvalidArgument"


def test_flags_and_arguments(ibdkit, block866342):
    _, _, per_tx = block866342
    tx, i, outs = per_tx[0][0], 0, per_tx[0][1]
    assert ibdkit.format_script_flags(0) == ""
    assert ibdkit.parse_script_flags("NONE") == ibdkit.parse_script_flags("") == 0
    assert ibdkit.parse_script_flags("P2SH,WITNESS") == 1 | 1 << 11
    # BIP16's exception block on mainnet runs without P2SH; a height before BIP66 has no DERSIG.
    bip16 = "00000000000002dc756eebf4f49723ed8d30cc28a5f108eb94b1ba88ac4f9c22"
    assert ibdkit.block_script_flags("main", 170060, bip16) == ""
    assert ibdkit.block_script_flags("main", 300000) == "P2SH,WITNESS,TAPROOT"
    assert ibdkit.verify_input(tx, i, outs, network="main", height=300000).flags == "P2SH,WITNESS,TAPROOT"
    for kwargs in ({"flags": "P2SH,NOPE"}, {"flags": 1 << 30}, {"flags": 1.5}, {"network": "moon", "height": 1},
                   {"block_hash": "zz"}):
        with pytest.raises(ibdkit.Error) as e:
            ibdkit.verify_input(tx, i, outs, **kwargs)
        assert e.value.kind == "InvalidArgument", kwargs
    with pytest.raises(ibdkit.Error):
        ibdkit.verify_input(tx, tx.input_count, outs)
    with pytest.raises(ibdkit.Error):
        ibdkit.verify_input(tx, i, outs + outs[:1])
    with pytest.raises(ibdkit.Error):
        ibdkit.verify_input(tx, i, [(1, 2)] * len(outs))
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.verify_input(tx.raw[:-1], i, outs)
    assert e.value.kind == "EndOfData"
    with pytest.raises(ibdkit.Error):
        ibdkit.verify_input(42, i, outs)
    for bad in ({"txout": 5}, {"value": 1}, {"value": 1.0, "script_pubkey": b""}, {"value": 1, "script_pubkey": "zz"},
                object()):
        with pytest.raises(ibdkit.Error) as e:
            ibdkit.verify_input(tx, i, [bad] + outs[1:])
        assert e.value.kind == "InvalidArgument", bad


def test_chain_order_blocks_verify_with_package_objects(ibdkit, chain):
    # The package's own objects: outputs walked from read_blocks (Output objects as spent outputs),
    # the flags from each block's height in chain order.
    utxos, blocks, inputs, mutated = {}, 0, 0, 0
    for block in ibdkit.read_blocks(chain):
        spent = []
        for t, tx in enumerate(block.transactions):
            if t > 0:
                spent.extend(utxos.pop((i.prevout_txid, i.prevout_vout)) for i in tx.inputs)
            for n, o in enumerate(tx.outputs):
                utxos[tx.txid, n] = o
        assert block.verify_scripts(spent) == [], block.height
        blocks += 1
        inputs += len(spent)
        if spent and block.height % 10 == 0:
            tx = block.transactions[1]
            own = spent[:tx.input_count]
            assert ibdkit.verify_input(tx, 0, own, network="regtest", height=block.height).ok
            # An output script of OP_FALSE: nothing spends it.
            false = [(own[0].value, b"\x00")] + own[1:]
            bad = block.verify_scripts(false + spent[tx.input_count:])
            assert [(f["tx_index"], f["input"], f["error_name"]) for f in bad] == [(1, 0, "EVAL_FALSE")]
            mutated += 1
    assert blocks > 100 and inputs > 0 and mutated > 0
