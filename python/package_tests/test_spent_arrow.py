"""The block tables as Arrow batches: the same rows as `ibdkit export` writes (cell by cell against
its CSV), batch boundaries, nulls, and a block whose spent outputs the caller supplies."""
import csv
import json
import pathlib

import pytest

from conftest import _need, run_cli

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "mainnet" / "blocks"
TABLES = ["blocks", "transactions", "inputs", "outputs"]


@pytest.fixture(scope="module")
def pa():
    return _need("pyarrow", "pip install pyarrow (scripts/pydeps.sh installs it)")


def _csv_cell(field, text):
    """A CSV cell as the Arrow value it stands for."""
    if text == "" and field.nullable:
        return None
    t = str(field.type)
    if t == "int64":
        return int(text)
    if t == "double":
        return float(text)
    if t == "bool":
        return text == "1"
    if t == "binary":
        return bytes.fromhex(text)
    return text


@pytest.mark.parametrize("table", TABLES)
def test_arrow_rows_equal_the_cli_export(ibdkit, pa, cli, chain, table, tmp_path):
    schema = ibdkit.table_schema(table)
    batches = list(ibdkit.read_blocks(chain, spent_outputs=True).to_arrow(table, batch_size=100))
    got = pa.Table.from_batches(batches, schema=schema).to_pylist()
    out = tmp_path / f"{table}.csv"
    run_cli(cli, "export", table, "--blocks-dir", chain, "--format", "csv", "--out", out, "--quiet")
    with open(out, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == schema.names
    want = [{fl.name: _csv_cell(fl, c) for fl, c in zip(schema, r)} for r in rows[1:]]
    assert len(got) == len(want) > 0
    assert got == want
    # Batches hold whole blocks: every batch but the last reaches the requested size.
    assert all(b.num_rows >= 100 for b in batches[:-1])
    if table == "transactions":
        assert got[0]["fee"] is None and got[0]["feerate"] is None  # the genesis coinbase
        paid = [r for r in got if r["fee"] is not None]
        assert paid and all(r["feerate"] == r["fee"] / r["vsize"] for r in paid)


def test_866342_with_the_callers_spent_outputs(ibdkit, pa):
    raw = (DATA / "block_866342.raw").read_bytes()
    spent = json.loads((DATA / "block_866342.spent_utxos.json").read_text())
    block = ibdkit.decode_block(raw).with_spent_outputs(spent)
    inputs = pa.Table.from_batches(list(ibdkit.to_arrow("inputs", [block], batch_size=1000)))
    assert inputs.num_rows == len(spent)
    assert inputs.column("value").to_pylist() == [e["txout"]["value"] for e in spent]
    assert inputs.column("spent_height").to_pylist() == [e["creation_height"] for e in spent]
    assert inputs.column("script_pubkey").to_pylist() == [bytes.fromhex(e["txout"]["script_pubkey"]) for e in spent]
    txs = pa.Table.from_batches(list(ibdkit.to_arrow("transactions", [block])))
    assert sum(f for f in txs.column("fee").to_pylist() if f is not None) == block.coinbase_value - block.subsidy
    blocks = pa.Table.from_batches(list(ibdkit.to_arrow("blocks", [block]))).to_pylist()
    assert blocks[0]["fees"] == block.fees and blocks[0]["height"] == 866342
    outputs = pa.Table.from_batches(list(ibdkit.to_arrow("outputs", [block])))
    addresses = outputs.column("address")
    types = outputs.column("script_type").to_pylist()
    assert addresses.null_count == types.count("nulldata") + types.count("nonstandard") > 0


def test_what_cannot_become_a_table_raises(ibdkit, pa):
    block = ibdkit.decode_block((DATA / "block_866342.raw").read_bytes())
    with pytest.raises(ibdkit.Error) as e:
        list(ibdkit.to_arrow("inputs", [block]))
    assert e.value.kind == "NoSpentOutputs"
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.to_arrow("coins", [])
    assert e.value.kind == "InvalidArgument" and "transactions" in str(e.value)
