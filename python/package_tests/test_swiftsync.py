"""ibdkit.swiftsync: the range check from Python, partials as bytes and pickles, the unspent runs
against the replayed chainstate, the salt's refusals, and arguments checked before any work."""
import pickle

import pytest

from conftest import run_cli


@pytest.fixture(scope="module")
def ss(ibdkit):
    from ibdkit import swiftsync
    return swiftsync


@pytest.fixture(scope="module")
def hints(cli, chain, cli_replay, tmp_path_factory):
    out = tmp_path_factory.mktemp("hints") / "utxo.hints"
    run_cli(cli, "hints", "-q", "--chainstate", cli_replay[0], "--blocks-dir", chain, "--out", out)
    return out


def test_ranges_combine_and_their_coins_are_the_replayed_set(ibdkit, ss, chain, cli_replay, hints):
    h = ss.Hints(hints)
    n = h.height
    assert n == cli_replay[1]["height"]
    salt = ss.Salt.new()
    parts = [ss.check_range(chain, h, salt, a, b, threads=t) for (a, b, t) in ((91, n, 2), (1, 40, 1), (41, 90, 1))]
    v = ss.combine(parts, n, "regtest")
    assert v.ok and v.reason is None and v.ranges == 3, v
    assert v.counts["blocks"] == n and v.counts["inputs"] > 0
    assert v.supply_sat <= v.supply_bound_sat
    assert sum(p.counts["unspent"] for p in parts) == cli_replay[1]["txouts"]
    stats = ss.unspent_stats(parts, height=n)
    cs = ibdkit.Chainstate(cli_replay[0]).stats()
    for key in ("txouts", "total_amount_sat", "hash_serialized_3", "transactions", "bogosize"):
        assert stats[key] == cs[key], key

    # Through bytes and through pickle (how Dask carries them): the same verdict and set.
    travelled = [ss.Partial.from_bytes(p.to_bytes(), p.unspent_run()) for p in parts]
    pickled = [pickle.loads(pickle.dumps(p)) for p in parts]
    for other in (travelled, pickled):
        assert ss.combine(other, n, "regtest") == v
        assert ss.unspent_stats(other, height=n) == stats
        assert [(p.agg_in, p.agg_out) for p in other] == [(p.agg_in, p.agg_out) for p in parts]
    # Without its run a partial still votes, but holds no coins.
    bare = [ss.Partial.from_bytes(p.to_bytes()) for p in parts]
    assert ss.combine(bare, n, "regtest").ok
    with pytest.raises(ibdkit.ArgumentError, match="holds no coins"):
        ss.unspent_stats(bare)
    # A range twice: not a cover, and its coins twice.
    assert not ss.combine(parts + parts[:1], n, "regtest").ok
    with pytest.raises(ibdkit.Error, match="two runs"):
        ss.unspent_stats(parts + parts[:1])
    # Another salt for one range breaks the sums.
    other = ss.check_range(chain, h, ss.Salt.new(), 1, 40)
    assert "aggregates differ" in ss.combine([other] + parts[:1] + parts[2:], n, "regtest").reason


def test_write_chainstate_writes_only_an_accepted_whole_set(ibdkit, ss, chain, cli_replay, hints, tmp_path):
    """write_chainstate: the runs of an accepted verdict become the replayed chainstate (same
    statistics, same best block); anything less is refused before a byte is written."""
    h = ss.Hints(hints)
    n = h.height
    salt = ss.Salt.new()
    parts = [ss.check_range(chain, h, salt, a, b) for (a, b) in ((1, 60), (61, n))]
    v = ss.combine(parts, n, "regtest")
    assert v.ok
    out = tmp_path / "cs"
    assert ss.write_chainstate(parts, out, v, source=chain) == cli_replay[1]["txouts"]
    got, want = ibdkit.Chainstate(out).stats(), ibdkit.Chainstate(cli_replay[0]).stats()
    for key in ("txouts", "hash_serialized_3", "height", "bestblock"):
        assert got[key] == want[key], key
    tip = want["bestblock"]

    def refused(match, *args, **kw):
        target = tmp_path / "refused"
        with pytest.raises((ibdkit.ArgumentError, ibdkit.RefusedError), match=match):
            ss.write_chainstate(*args, **kw)
        assert not target.exists() or not any(target.iterdir())

    refused("nothing is written", parts[:1] + [ss.check_range(chain, h, ss.Salt.new(), 61, n)], tmp_path / "refused",
            ss.combine(parts[:1] + [ss.check_range(chain, h, ss.Salt.new(), 61, n)], n, "regtest"), tip=tip)
    refused("covering 1..", parts[:1], tmp_path / "refused", v, tip=tip)
    refused("holds no coins", [ss.Partial.from_bytes(p.to_bytes()) for p in parts], tmp_path / "refused", v, tip=tip)
    refused("exactly one", parts, tmp_path / "refused", v)
    refused("not empty", parts, out, v, tip=tip)


def test_unspent_coins_as_arrow_equal_the_chainstates(ibdkit, ss, chain, cli_replay, hints, need_pyarrow):
    import pyarrow as pa
    salt = ss.Salt.new()
    n = ss.Hints(hints).height
    parts = [ss.check_range(chain, hints, salt, 1, 70), ss.check_range(chain, hints, salt, 71, n)]
    ours = pa.Table.from_batches(list(ss.unspent_to_arrow(parts, "regtest", 500)))
    theirs = pa.Table.from_batches(list(ibdkit.Chainstate(cli_replay[0], network="regtest").to_arrow(500)))
    assert ours.equals(theirs)


def test_the_worker_bytes_are_the_one_way_out_of_a_salt(ss, chain, hints):
    salt = ss.Salt.new()
    wb = salt.to_worker_bytes()
    assert len(bytes(wb)) == 32 and bytes(wb).hex() not in repr(wb) + str(wb) + f"{wb}" + repr(salt) + str(salt)
    again = ss.Salt.from_worker_bytes(bytes(wb))
    a = ss.check_range(chain, hints, salt, 1, 30, collect_unspent=False)
    b = ss.check_range(chain, hints, again, 1, 30, collect_unspent=False)
    assert (a.agg_in, a.agg_out) == (b.agg_in, b.agg_out) and a.unspent_run() is None
    assert pickle.loads(pickle.dumps(wb)) == wb
    for dump in (pickle.dumps, lambda s: pickle.dumps(s, protocol=2)):
        with pytest.raises(TypeError, match="to_worker_bytes"):
            dump(salt)
    with pytest.raises(TypeError):
        ss.Salt()


def test_arguments_are_checked_with_one_kind_per_cause(ibdkit, ss, chain, hints, tmp_path):
    salt = ss.Salt.new()
    with pytest.raises(ibdkit.NotFoundError, match="source"):
        ss.check_range(tmp_path / "nowhere", hints, salt, 1, 2)
    with pytest.raises(ibdkit.NotFoundError, match="path"):
        ss.Hints(tmp_path / "nowhere.hints")
    for first, last in ((0, 5), (5, 4), (1, 10_000)):
        with pytest.raises(ibdkit.ArgumentError, match="first..last|first must"):
            ss.check_range(chain, hints, salt, first, last)
    with pytest.raises(ibdkit.ArgumentError, match="threads"):
        ss.check_range(chain, hints, salt, 1, 2, threads=1025)
    with pytest.raises(ibdkit.ArgumentError, match="mode='coins' reads the spent coins from a Bitcoin Core data directory"):
        ss.check_range(chain, hints, salt, 1, 2, mode="coins")
    with pytest.raises(ibdkit.ArgumentError, match="mode must be"):
        ss.check_range(chain, hints, salt, 1, 2, mode="fast")
    with pytest.raises(TypeError, match="Salt"):
        ss.check_range(chain, hints, salt.to_worker_bytes(), 1, 2)
    with pytest.raises(ibdkit.ArgumentError, match="32 bytes, got 31"):
        ss.Salt.from_worker_bytes(bytes(31))
    with pytest.raises(ibdkit.ArgumentError, match="network"):
        ss.combine([], 10, "moon")
    (tmp_path / "junk.hints").write_bytes(b"UTXO\x00\x02\x00\x00\x00\x00")
    with pytest.raises(ibdkit.Error) as e:
        ss.Hints(tmp_path / "junk.hints")
    assert e.value.kind == "EndOfData"


def test_malformed_partials_are_typed_errors(ibdkit, ss, chain, hints):
    p = ss.check_range(chain, hints, ss.Salt.new(), 3, 9)
    good, run = p.to_bytes(), p.unspent_run()
    cases = [(good[:-1], "EndOfData"), (good + b"\x00", "TrailingData"), (b"x" + good[1:], "BadMagic"),
             (good[:4] + b"\x07" + good[5:], "InvalidValue")]
    for data, kind in cases:
        with pytest.raises(ibdkit.Error) as e:
            ss.Partial.from_bytes(data)
        assert e.value.kind == kind, data[:8]
    other = ss.check_range(chain, hints, ss.Salt.new(), 3, 10).unspent_run()
    with pytest.raises(ibdkit.Error, match="range is not the partial's"):
        ss.Partial.from_bytes(good, other)
    more = run[:13] + (int.from_bytes(run[13:21], "little") + 1).to_bytes(8, "little") + run[21:]
    with pytest.raises(ibdkit.Error, match="the partial counts"):
        ss.Partial.from_bytes(good, more)
    with pytest.raises(ibdkit.Error) as e:
        ss.unspent_stats([run[:-1]])
    assert e.value.kind == "EndOfData"
    with pytest.raises(TypeError):
        ss.Partial.from_bytes("text")
