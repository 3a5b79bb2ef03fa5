"""ibdkit.replay, ibdkit.Chainstate (stats, get, iteration, to_arrow) against the CLI."""
import pytest


def test_replay_matches_cli(ibdkit, chain, cli_replay, tmp_path):
    _, want = cli_replay
    seen = []
    got = ibdkit.replay(chain, chainstate=tmp_path / "cs", dbcache=1, policy="zero-after-free",
                        progress=seen.append)
    for k in ("height", "bestblock", "txouts", "transactions", "bogosize", "hash_serialized_3",
              "total_amount_sat", "blocks_connected", "transactions_connected", "network"):
        assert got[k] == want[k], k
    assert got["reject_reason"] is None and got["interrupted"] is False and got["flushes"] >= 1
    assert got["policy"] == "zero-after-free"
    assert all("height" in p and "tip_height" in p for p in seen)
    # Every flush, the final one too, is announced before it starts.
    assert sum(p["flushing"] for p in seen) == got["flushes"]


def test_replay_stop_height_and_resume(ibdkit, chain, cli_replay, tmp_path):
    first = ibdkit.replay(chain, chainstate=tmp_path / "cs", stop_height=60, progress=False)
    assert first["height"] == 60
    rest = ibdkit.replay(chain, chainstate=tmp_path / "cs", policy="hardened", progress=False)
    assert rest["start_height"] == 61
    assert rest["hash_serialized_3"] == cli_replay[1]["hash_serialized_3"]


def test_replay_without_statistics(ibdkit, chain, cli_replay, tmp_path):
    got = ibdkit.replay(chain, chainstate=tmp_path / "cs", statistics=False, progress=False)
    assert got["height"] == cli_replay[1]["height"] and got["bestblock"] == cli_replay[1]["bestblock"]
    assert "hash_serialized_3" not in got and "txouts" not in got
    assert ibdkit.Chainstate(tmp_path / "cs").stats()["hash_serialized_3"] == cli_replay[1]["hash_serialized_3"]


def test_replay_assumevalid(ibdkit, chain, cli_replay, tmp_path):
    # Regtest has no assumevalid block: every script is verified by default, as with 0.
    want = cli_replay[1]
    for assumevalid in (None, 0, "0"):
        got = ibdkit.replay(chain, assumevalid=assumevalid, progress=False)
        assert got["script_checks_from_height"] == 1 and got["script_check_reason"] == "assumevalid=0 (always verify)"
        assert got["script_checked_inputs"] == want["script_checked_inputs"] > 0
        assert got["hash_serialized_3"] == want["hash_serialized_3"]
    # A hash of no block here: "not in headers", verified too.
    got = ibdkit.replay(chain, assumevalid="11" * 32, progress=False)
    assert got["script_check_reason"] == "assumevalid hash not in headers"
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.replay(chain, assumevalid="nope", progress=False)
    assert e.value.kind == "InvalidArgument" and "assumevalid" in e.value.message


def test_replay_bad_options(ibdkit, chain, tmp_path):
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.replay(chain, policy="nope", progress=False)
    assert e.value.kind == "InvalidArgument" and "hardened" in e.value.message
    assert set(ibdkit.policies()) == {"plain", "zero-after-free", "barrier-only", "secure", "hardened"}


def test_progress_callback_exception_propagates(ibdkit, chain, tmp_path):
    def boom(p):
        raise RuntimeError("stop here")
    # The callback runs about 4 times a second: a tiny chain may finish before the first call.
    try:
        ibdkit.replay(chain, chainstate=tmp_path / "cs", dbcache=0, via_p2p=True, progress=boom)
    except RuntimeError as e:
        assert "stop here" in str(e)


def test_chainstate_stats_get_iter(ibdkit, cli_replay):
    cs_dir, want = cli_replay
    cs = ibdkit.Chainstate(cs_dir, network="regtest", policy="hardened")
    s = cs.stats()
    assert s["hash_serialized_3"] == want["hash_serialized_3"] and s["txouts"] == want["txouts"]
    assert cs.best_block == want["bestblock"]
    n = cs.stats("none")
    for k in ("txouts", "transactions", "bogosize", "total_amount_sat", "height"):
        assert n[k] == s[k], k
    coins = list(cs)
    assert len(coins) == s["txouts"]
    assert sum(c.value for c in coins) == s["total_amount_sat"]
    with pytest.deprecated_call(match=r"Coin\.amount is deprecated: use Coin\.value"):
        assert coins[0].amount == coins[0].value  # the old spelling still reads, with a warning
    for c in coins[:: max(1, len(coins) // 50)]:
        g = cs.get(c.txid, c.vout)
        assert (g.txid, g.vout, g.value, g.height, g.coinbase, g.script_pubkey, g.address) == \
               (c.txid, c.vout, c.value, c.height, c.coinbase, c.script_pubkey, c.address)
    assert cs.get("00" * 32, 0) is None
    with pytest.raises(ibdkit.Error) as e:
        cs.get("xyz", 0)
    assert e.value.kind == "InvalidArgument"
    with pytest.raises(ibdkit.Error) as e:
        cs.stats("muhash")
    assert e.value.kind == "InvalidArgument"


def test_chainstate_errors(ibdkit, tmp_path):
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.Chainstate(tmp_path / "missing")
    assert e.value.kind in ("NotFound", "IoError", "InvalidArgument")
    with pytest.raises(ibdkit.Error):
        ibdkit.Chainstate(tmp_path, policy="nope")


def test_to_arrow(ibdkit, cli_replay, need_pyarrow, tmp_path):
    pa = need_pyarrow
    import pyarrow.parquet as pq
    cs_dir, want = cli_replay
    cs = ibdkit.Chainstate(cs_dir, network="regtest")
    batches = list(cs.to_arrow(batch_size=100))
    assert all(b.num_rows <= 100 for b in batches) and len(batches) > 1
    t = pa.Table.from_batches(batches, schema=cs.schema())
    assert t.num_rows == want["txouts"]
    assert t.column("value").to_pylist() and sum(t.column("value").to_pylist()) == want["total_amount_sat"]
    coins = list(cs)
    rows = t.to_pylist()
    for c, r in zip(coins, rows):
        assert (r["txid"], r["vout"], r["height"], r["coinbase"], r["value"], r["script_type"],
                r["address"], r["script_pubkey"]) == (c.txid, c.vout, c.height, c.coinbase, c.value,
                                              c.script_type, c.address, c.script_pubkey)
    assert t.column("address").null_count == sum(1 for c in coins if c.address is None)
    hex_t = pa.Table.from_batches(cs.to_arrow(script_hex=True))
    assert hex_t.column("script_pubkey").to_pylist()[:5] == [c.script_pubkey.hex() for c in coins[:5]]
    pq.write_table(t, tmp_path / "utxo.parquet")
    assert pq.read_table(tmp_path / "utxo.parquet").equals(t)
    with pytest.raises(ibdkit.Error):
        cs.to_arrow(batch_size=0)


def test_sync_reports_an_unreachable_peer(ibdkit, tmp_path):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.sync(f"127.0.0.1:{port}", network="regtest", chainstate=tmp_path / "cs", timeout=2, progress=False)
    # No block connected: said so, not as height -1.
    assert e.value.kind == "Connect" and "sync stopped before its first block: " in e.value.message, e.value.message
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.sync("127.0.0.1:1", network="regtest", window=0, progress=False)
    assert e.value.kind == "InvalidArgument"


def test_to_arrow_batch_sizes_agree(ibdkit, cli_replay, need_pyarrow):
    """Tiny batches take the buffers' grow and trim paths (a long script in a 1-row batch); every
    batch is a valid Arrow batch and the concatenation does not depend on the batch size."""
    pa = need_pyarrow
    cs = ibdkit.Chainstate(cli_replay[0], network="regtest")
    for script_hex in (False, True):
        ref = None
        for size in (65536, 7, 1):
            batches = list(cs.to_arrow(batch_size=size, script_hex=script_hex))
            for b in batches:
                b.validate(full=True)
            t = pa.Table.from_batches(batches, schema=cs.schema(script_hex=script_hex))
            if ref is None:
                ref = t
            assert t.equals(ref), (size, script_hex)
