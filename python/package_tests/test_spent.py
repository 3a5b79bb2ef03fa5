"""Blocks with their spent outputs in Python: block 866,342 (tests/data) with the outputs its inputs
spend, given by the caller; fees against the coinbase; the attributes without spent outputs."""
import json
import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "mainnet" / "blocks"


@pytest.fixture(scope="module")
def raw_and_spent():
    return (DATA / "block_866342.raw").read_bytes(), json.loads((DATA / "block_866342.spent_utxos.json").read_text())


def test_fees_of_866342_are_its_coinbase_minus_the_subsidy(ibdkit, raw_and_spent):
    raw, spent = raw_and_spent
    block = ibdkit.decode_block(raw).with_spent_outputs(spent)  # height from its BIP34 coinbase
    assert block.height == 866342 and block.has_spent_outputs
    assert block.subsidy == 312_500_000
    assert block.fees == block.coinbase_value - block.subsidy
    txs = block.transactions
    assert txs[0].fee is None and txs[0].feerate is None
    assert sum(tx.fee for tx in txs[1:]) == block.fees
    inputs = [i for tx in txs[1:] for i in tx.inputs]
    assert [i.value for i in inputs] == [e["txout"]["value"] for e in spent]
    assert [i.height for i in inputs] == [e["creation_height"] for e in spent]
    assert [i.script_pubkey.hex() for i in inputs] == [e["txout"]["script_pubkey"] for e in spent]
    first = inputs[0]
    assert first.script_type == "scripthash" and first.address.startswith("3") and first.coinbase is False
    assert [i.coinbase for i in inputs] == [e["is_coinbase"] for e in spent]
    with pytest.deprecated_call(match=r"Input\.is_coinbase is deprecated: use Input\.coinbase"):
        assert first.is_coinbase is False  # the old spelling still reads, with a warning
    tx = txs[1]
    assert tx.fee == sum(i.value for i in tx.inputs) - sum(o.value for o in tx.outputs)
    assert tx.feerate == tx.fee / tx.vsize
    # (value, script) pairs work too; the coins' heights then default to 0.
    pairs = [(e["txout"]["value"], e["txout"]["script_pubkey"]) for e in spent]
    assert ibdkit.decode_block(raw).with_spent_outputs(pairs).fees == block.fees


def test_spent_outputs_that_do_not_fit_raise(ibdkit, raw_and_spent):
    raw, spent = raw_and_spent
    block = ibdkit.decode_block(raw)
    with pytest.raises(ibdkit.Error) as e:
        block.with_spent_outputs(spent[:-1])
    assert e.value.kind == "InvalidValue"
    poor = [dict(e, txout=dict(e["txout"], value=0)) for e in spent]
    with pytest.raises(ibdkit.Error) as e:
        block.with_spent_outputs(poor)
    assert e.value.kind == "Corrupt" and "bad-txns-in-belowout" in str(e.value)


def test_without_spent_outputs_the_attributes_raise(ibdkit, raw_and_spent):
    block = ibdkit.decode_block(raw_and_spent[0])
    assert not block.has_spent_outputs
    for get in (lambda: block.fees, lambda: block.subsidy, lambda: block.transactions[1].fee,
                lambda: block.transactions[1].inputs[0].value, lambda: block.transactions[1].inputs[0].address):
        with pytest.raises(ibdkit.Error) as e:
            get()
        assert e.value.kind == "NoSpentOutputs" and "spent_outputs=True" in str(e.value)
