"""One name per concept (docs/python.md, *One name per concept*): Output, Input's spent coin and
Coin spell value, script, script type, address and the coinbase flag alike, as attributes (never a
method that `o.address` would silently hand back bound), and the tables say the same: the block
tables' columns, Chainstate.to_arrow's schema and the header of `utxo dump`'s CSV."""
import pytest

from conftest import run_cli

COIN_FIELDS = ["value", "script_pubkey", "script_type", "address"]
UTXO_COLUMNS = ["txid", "vout", "height", "coinbase", "value", "script_type", "address", "script_pubkey"]


def test_output_input_and_coin_share_attribute_names(ibdkit, chain, cli_replay):
    block = next(b for b in ibdkit.read_blocks(chain, spent_outputs=True) if len(b) > 1)
    tx = block.transactions[1]
    coin = next(iter(ibdkit.Chainstate(cli_replay[0], network="regtest")))
    for obj, names in ((tx.outputs[0], COIN_FIELDS), (tx.inputs[0], COIN_FIELDS + ["coinbase"]),
                       (coin, COIN_FIELDS + ["coinbase"])):
        for name in names:
            value = getattr(obj, name)
            assert not callable(value), f"{type(obj).__name__}.{name} is a method, not a value"
    assert tx.inputs[0].coinbase in (True, False) and coin.coinbase in (True, False)
    assert isinstance(tx.outputs[0].value, int) and isinstance(coin.value, int)


def test_tables_share_the_column_names(ibdkit, cli, cli_replay, tmp_path, need_pyarrow):
    from ibdkit import _ibdkit
    outputs = [c[0] for c in _ibdkit._table_columns("outputs")]
    inputs = [c[0] for c in _ibdkit._table_columns("inputs")]
    assert set(COIN_FIELDS) <= set(outputs) and set(COIN_FIELDS + ["coinbase"]) <= set(inputs), (outputs, inputs)
    assert "is_coinbase" not in inputs
    cs = ibdkit.Chainstate(cli_replay[0], network="regtest")
    assert cs.schema().names == UTXO_COLUMNS
    assert cs.schema(script_hex=True).names == UTXO_COLUMNS
    out = tmp_path / "utxo.csv"
    run_cli(cli, "utxo", "dump", "--chainstate", cli_replay[0], "--format", "csv", "--out", out, "--network", "regtest")
    assert out.read_text().split("\n", 1)[0] == ",".join(UTXO_COLUMNS)


@pytest.mark.parametrize("table", ["blocks", "transactions", "inputs", "outputs"])
def test_no_table_uses_an_old_spelling(ibdkit, table):
    from ibdkit import _ibdkit
    names = {c[0] for c in _ibdkit._table_columns(table)}
    assert not names & {"amount", "type", "script", "is_coinbase"}, (table, names)
