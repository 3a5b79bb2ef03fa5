"""SwiftSync across processes: `ibdkit.swiftsync.run_dask` on a real `distributed.LocalCluster`
(two worker processes over loopback) gives the verdict and the UTXO set of the in-process range
check and of a classic replay — on a generated chain with spends and on a datadir Core's engine
wrote; wrong hints fail; a worker killed mid-task costs a retry, not the result; the salt never
reaches a worker's or the scheduler's log."""
import json
import os
import random
import signal
import threading
import time

import pytest

from conftest import import_ibdkit, import_pbk, missing, on_ci, run_cli  # noqa: F401

ibdkit = import_ibdkit()
from ibdkit import swiftsync  # noqa: E402

try:
    import distributed
except ImportError as e:  # pragma: no cover - depends on the environment
    missing(f"distributed does not import ({e})",
            "distributed (scripts/pydeps.sh installs it into build/venv: pip install distributed, or pip install .[dask])")

from test_replay_datadir import START, framed_records, records  # noqa: E402
from test_swiftsync_hints import core_datadir_and_hints, hintsfile, parse_lists  # noqa: E402


def local_cluster():
    """Two worker processes of one thread each, on loopback; the workers import this build's module."""
    staged = os.path.dirname(os.path.dirname(ibdkit.__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (staged, os.environ.get("PYTHONPATH")) if p)
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address=":0", silence_logs=False)
    return cluster, distributed.Client(cluster)


@pytest.fixture(scope="module")
def client():
    cluster, c = local_cluster()
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def generated(cli, tmp_path_factory):
    """A 220-block chain with spends, its classic replay (chainstate, JSON) and its hintsfile."""
    tmp = tmp_path_factory.mktemp("ss-dask")
    run_cli(cli, "gen-chain", "--out", tmp / "chain", "--blocks", "220", "--target-mb", "4", "--seed", "44",
            "--start-time", str(START), "--xor", "--no-progress", "--json")
    blocks = tmp / "chain" / "blocks"
    cs = tmp / "cs"
    replayed = json.loads(run_cli(cli, "replay", "--json", "-q", "--blocks-dir", blocks, "--chainstate", cs).stdout)
    run_cli(cli, "hints", "-q", "--chainstate", cs, "--blocks-dir", blocks, "--out", tmp / "utxo.hints")
    return blocks, tmp / "utxo.hints", cs, replayed


def test_dask_equals_the_in_process_check_and_the_replay(client, generated):
    blocks, hints, cs, replayed = generated
    run = swiftsync.run_dask(client, blocks, hints, ranges=5)
    v = run.verdict
    assert v.ok and v.reason is None, v
    assert v.height == 220 and v.ranges == 5 and v.mode == "outpoints"
    assert v.counts["inputs"] > 1000, "the chain spends"
    assert [(p.first, p.last) for p in run.partials] == run.ranges
    assert run.ranges[0][0] == 1 and run.ranges[-1][1] == 220

    salt = swiftsync.Salt.new()
    whole = swiftsync.check_range(blocks, hints, salt, 1, 220, threads=2)
    local = swiftsync.combine([whole], 220, v.network)
    assert local.ok
    assert (local.counts, local.supply_sat) == (v.counts, v.supply_sat)

    stats = run.unspent_stats()
    assert stats == swiftsync.unspent_stats([whole], height=220)
    assert stats["hash_serialized_3"] == replayed["hash_serialized_3"]
    assert (stats["txouts"], stats["total_amount_sat"]) == (replayed["txouts"], replayed["total_amount_sat"])
    core_view = ibdkit.Chainstate(cs).stats()
    assert stats["hash_serialized_3"] == core_view["hash_serialized_3"]
    coins = list(run.unspent_coins())
    assert len(coins) == replayed["txouts"]
    assert [(c.txid, c.vout, c.value) for c in coins] == [(c.txid, c.vout, c.value) for c in ibdkit.Chainstate(cs)]


@pytest.mark.parametrize("mode", ["outpoints", "coins"])
@pytest.mark.parametrize("chain", ["generated", "core_kernel_blocks_1-206"])
def test_dask_on_a_datadir_cores_engine_wrote(client, cli, shared, tmp_path, chain, mode):
    """Core's engine writes a regtest datadir from a generated chain or from Core's own test chain
    (tests/data, real signed spends); the hints come from its chainstate, the blocks through its
    block index. Coins mode: each worker reads the spent coins from the rev files and checks Core's
    rules, every script included (regtest has no assumevalid block), as the classic replay does."""
    pbk = import_pbk()  # noqa: F841 (Core's engine writes the datadir)
    if chain == "generated":
        run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "120", "--target-mb", "2", "--seed", "45",
                "--start-time", str(START), "--no-progress", "--json")
        blocks = records(tmp_path / "chain" / "blocks")[1:]
    else:
        blocks = [payload for _, _, payload, _ in framed_records(shared / "regtest", pattern=f"{chain}.blk")]
    datadir, height, expected, coins, _ = core_datadir_and_hints(tmp_path, blocks)
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", tmp_path / "core.hints")
    assert (tmp_path / "core.hints").read_bytes() == expected
    run = swiftsync.run_dask(client, datadir, tmp_path / "core.hints", ranges=3, split="blocks", threads_per_task=2,
                             mode=mode)
    assert run.verdict.ok, run.verdict
    assert run.verdict.network == "regtest" and run.verdict.counts["unspent"] == coins
    assert run.verdict.counts["inputs"] > 0 and run.verdict.mode == mode
    assert all(p.mode == mode for p in run.partials)
    replayed = ibdkit.replay(datadir, statistics=True)
    assert run.unspent_stats()["hash_serialized_3"] == replayed["hash_serialized_3"]
    assert replayed["height"] == height
    want = replayed["script_checked_inputs"] if mode == "coins" else 0
    assert run.verdict.script_checked_inputs == want and (mode == "outpoints" or want == run.verdict.counts["inputs"])
    # The UTXO set at n written from the workers' runs: the replay's.
    assert run.write_chainstate(tmp_path / "cs") == replayed["txouts"]
    assert ibdkit.Chainstate(tmp_path / "cs").stats()["hash_serialized_3"] == replayed["hash_serialized_3"]


def test_dask_refuses_wrong_hints(client, generated, tmp_path):
    blocks, hints, _, _ = generated
    good = hints.read_bytes()
    lists = parse_lists(good, 220)
    h = next(h for h in range(220, 0, -1) if lists[h - 1])
    lists[h - 1] = lists[h - 1][1:]  # an unspent output said to be spent: its hash goes into agg_out
    (tmp_path / "bad.hints").write_bytes(hintsfile(lists))
    run = swiftsync.run_dask(client, blocks, tmp_path / "bad.hints", ranges=4)
    assert not run.verdict.ok
    assert "aggregates differ" in run.verdict.reason


def test_dask_arguments_are_checked_before_any_task(client, generated, tmp_path):
    blocks, hints, _, _ = generated
    with pytest.raises(ibdkit.ArgumentError, match="not within the hintsfile's 1..220"):
        swiftsync.run_dask(client, blocks, hints, ranges=[(1, 100), (101, 221)])
    with pytest.raises(ibdkit.ArgumentError, match="mode='coins'"):
        swiftsync.run_dask(client, blocks, hints, mode="coins")
    with pytest.raises(ibdkit.NotFoundError, match="hints"):
        swiftsync.run_dask(client, blocks, tmp_path / "none.hints")
    with pytest.raises(TypeError, match="distributed.Client"):
        swiftsync.run_dask(object(), blocks, hints)
    # Ranges given as pairs that leave a gap: the run completes and the verdict says so.
    run = swiftsync.run_dask(client, blocks, hints, ranges=[(1, 100), (102, 220)], collect_unspent=False)
    assert not run.verdict.ok and "exactly once" in run.verdict.reason


def test_a_worker_killed_mid_task_costs_a_retry_not_the_result(generated, tmp_path):
    """A fresh cluster (workers cache the functions they ran); one worker dies inside its first
    range after checking half of it. Dask reschedules the range and the verdict is unchanged."""
    blocks, hints, _, replayed = generated
    marker = str(tmp_path / "killed")
    cluster, c = local_cluster()
    try:
        def install_killer(marker=marker):
            import ibdkit._swiftsync_dask as d
            original = d._range_task

            def killing(source, hints_path, salt_bytes, first, last, *rest):
                if first == 1 and not os.path.exists(marker):
                    open(marker, "w").close()
                    from ibdkit import swiftsync as ss
                    ss.check_range(source, hints_path, ss.Salt.from_worker_bytes(salt_bytes), first, max(first, last // 2))
                    os.kill(os.getpid(), signal.SIGKILL)
                return original(source, hints_path, salt_bytes, first, last, *rest)

            d._range_task = killing

        c.run(install_killer)
        run = swiftsync.run_dask(c, blocks, hints, ranges=4)
        assert os.path.exists(marker), "a worker was killed"
        assert run.verdict.ok, run.verdict
        assert run.unspent_stats()["hash_serialized_3"] == replayed["hash_serialized_3"]
    finally:
        c.close()
        cluster.close()


def killed_run(c, blocks, hints, victim, delay):
    """run_dask on `c` with the worker process `victim` SIGKILLed after `delay` seconds: returns
    (DaskRun or the exception raised, whether the run was still going when the worker died)."""
    result = {}

    def go():
        try:
            result["run"] = swiftsync.run_dask(c, blocks, hints, ranges=4)
        except Exception as e:  # noqa: BLE001 (the campaign judges what was raised)
            result["run"] = e
    t = threading.Thread(target=go)
    t.start()
    time.sleep(delay)
    during = t.is_alive()
    os.kill(victim, signal.SIGKILL)
    t.join(timeout=300)
    assert not t.is_alive(), "the run hangs after a worker died"
    return result["run"], during


def worker_pids(c, dead):
    """The two workers' pids once neither is one already killed (the scheduler may not have seen
    the death yet), sorted; a worker killed while its nanny starts it is not restarted."""
    deadline = time.monotonic() + 30
    while True:
        pids = sorted(p for p in c.run(os.getpid, on_error="return").values() if isinstance(p, int))
        if len(pids) == 2 and not set(pids) & dead:
            return pids
        if time.monotonic() > deadline:
            raise distributed.TimeoutError(f"workers {pids}, killed {sorted(dead)}")
        time.sleep(0.1)


def test_kill_campaign_on_a_worker(generated, tmp_path):
    """Kill campaign (test_kill_campaign's seed and count: a few kills, 50 with IBDKIT_LONG_TESTS=1):
    one of the two worker processes SIGKILLed at a random moment of a run. The nanny restarts it
    and Dask reschedules its ranges: the run ends with the replay's UTXO set, or raises a clear
    error and no chainstate is written from it."""
    from test_kill_campaign import KILLS, SEED
    blocks, hints, _, replayed = generated
    rng = random.Random(f"{SEED}-dask-worker")
    cluster, c = local_cluster()
    outcomes, dead = [], set()
    try:
        swiftsync.run_dask(c, blocks, hints, ranges=4)  # the workers import ibdkit: not part of a run's time
        t = time.monotonic()
        swiftsync.run_dask(c, blocks, hints, ranges=4)
        budget = 1.2 * (time.monotonic() - t)
        for i in range(KILLS):
            try:
                c.wait_for_workers(2, timeout=30)
            except distributed.TimeoutError:
                # A nanny whose worker was killed just after its restart may close instead of
                # restarting it again (Dask's doing, between runs): a fresh cluster goes on.
                outcomes.append("cluster replaced")
                c.close()
                cluster.close()
                cluster, c = local_cluster()
            victim = rng.choice(worker_pids(c, dead))
            delay = rng.uniform(0, budget)
            where = f"dask worker round {i}: seed {SEED}, pid {victim} killed after {delay:.3f} s"
            run, during = killed_run(c, blocks, hints, victim, delay)
            dead.add(victim)
            cs = tmp_path / f"cs{i}"
            if isinstance(run, Exception):
                outcomes.append("failed")
                assert isinstance(run, distributed.KilledWorker) or "worker" in str(run).lower(), (repr(run), where)
                assert not cs.exists(), where
                continue
            outcomes.append("completed, worker died during the run" if during else "completed before the kill")
            assert run.verdict.ok, (run.verdict, where)
            assert run.unspent_stats()["hash_serialized_3"] == replayed["hash_serialized_3"], where
            assert run.write_chainstate(cs) == replayed["txouts"], where
            assert ibdkit.Chainstate(cs).stats()["hash_serialized_3"] == replayed["hash_serialized_3"], where
    finally:
        c.close()
        cluster.close()
    print(f"dask worker kills: seed {SEED}: {dict(sorted((o, outcomes.count(o)) for o in set(outcomes)))}")
    assert outcomes.count("cluster replaced") < max(2, KILLS // 5), "the nannies keep giving up"


def test_the_salt_never_reaches_a_log(client, generated):
    blocks, hints, _, _ = generated
    salt = swiftsync.Salt.new()
    wb = salt.to_worker_bytes()
    raw = bytes(wb)
    assert repr(wb) == str(wb) == f"{wb}" == "<ibdkit.swiftsync salt bytes (hidden)>"
    assert "hidden" in repr(salt) and raw.hex() not in repr(salt)
    # A task that fails on the worker: Dask logs its arguments ("Compute Failed").
    from ibdkit._swiftsync_dask import _range_task
    f = client.submit(_range_task, str(blocks), str(hints), wb, 9, 3, 1, "outpoints", None, True, None, False, pure=False)
    with pytest.raises(ibdkit.ArgumentError, match="first..last"):
        f.result()
    swiftsync.run_dask(client, blocks, hints, ranges=2)
    logs = [msg for nanny in (False, True) for lines in client.get_worker_logs(n=10_000, nanny=nanny).values()
            for _, msg in lines]
    logs += [msg for _, msg in client.get_scheduler_logs(n=10_000)]
    text = "\n".join(logs)
    assert "Compute Failed" in text, "the failed task was logged"
    # Dask versions that print a failed task's arguments print them with repr().
    assert repr((str(blocks), wb, 9)).count("salt bytes (hidden)") == 1
    for needle in (raw.hex(), repr(raw)[2:-1], raw.hex().upper()):
        assert needle not in text
