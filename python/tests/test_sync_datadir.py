"""`ibdkit sync --datadir NEW`: the sync leaves a Bitcoin Core data directory that Core's engine opens.

A datadir Core's engine wrote is served (`ibdkit serve`); ibdkit syncs from it into a new datadir in
two runs (the second appends to what the first wrote); then Core's engine reads every block's
spent coins from NEW's rev files through NEW's index (the coins it spent itself), opens NEW — its
block index and ibdkit's chainstate — reports the same tip and connects the rest of the chain on top;
`ibdkit replay --datadir NEW` ends on the same UTXO set; every rev record's checksum verifies and
its undo bytes are those Core wrote for the same block; a Core datadir ibdkit did not write is
refused.
"""
import json
import os
import random
import shutil
import subprocess
import time

import pytest

from conftest import import_ibdkit, import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import FIELDS, block_hash, core_datadir, framed_records  # noqa: E402
from test_spent_core import cores_spent_outputs  # noqa: E402
from test_swiftsync_coins import gen_blocks  # noqa: E402
from test_sync_swiftsync import Peer, proxy  # noqa: E402
from test_undo_core import by_block, rev_records  # noqa: E402

STOP = 140  # the second sync's last block; coins are spent from height 101 on
SWIFTSYNC_N = 125  # the hints' height: SwiftSync checks 1..n, the classic engine the rest


@pytest.fixture(scope="module")
def source(cli, tmp_path_factory):
    """A datadir Core's engine wrote, its blocks, and its classic replay."""
    tmp = tmp_path_factory.mktemp("source")
    blocks = gen_blocks(cli, tmp, 160, seed=71)
    datadir, height, tip, _ = core_datadir(tmp, blocks, seed=19)
    expected = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", datadir).stdout)
    return datadir, blocks, height, tip, expected


def sync(cli, port, datadir, *extra):
    return run_cli(cli, "sync", "--json", "--connect", f"127.0.0.1:{port}", "--network", "regtest", "--timeout", "20",
                   "--datadir", datadir, *extra)


def test_core_opens_the_datadir_a_sync_wrote_and_continues_it(cli, source, tmp_path):
    src, blocks, height, tip, expected = source
    new = tmp_path / "node"
    server = Peer(cli, "--datadir", src)
    try:
        first = json.loads(sync(cli, server.port, new, "--stop-height", "60", "-q").stdout)
        assert first["height"] == 60
        r = sync(cli, server.port, new, "--stop-height", str(STOP), "--dbcache", "1")
        second = json.loads(r.stdout)
    finally:
        server.stop()
    assert (second["height"], second["start_height"]) == (STOP, 61), "the second run appends"
    assert f"bitcoind -datadir={new} -chain=regtest" in r.stderr, r.stderr
    assert_core_takes_over(cli, source, new, second, tmp_path)


def assert_core_takes_over(cli, source, new, second, tmp_path, replaced=False):
    """NEW, synced to STOP (`second` the sync's JSON), is read by ibdkit's readers as Core's datadir
    is, holds Core's undo bytes for every block, and Core's engine opens it and continues it. With
    `replaced`, some blocks' first undo records were replaced (a lying peer's): the rev files also
    hold those, named by no index entry."""
    src, blocks, height, tip, expected = source
    net = new / "regtest"
    assert (net / "chainstate").is_dir() and len((net / "blocks" / "xor.dat").read_bytes()) == 8
    assert any((net / "blocks" / "xor.dat").read_bytes())

    # ibdkit's readers of Core's datadirs read it: the same UTXO set as the sync's.
    replayed = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", new).stdout)
    assert (replayed["height"], replayed["bestblock"]) == (STOP, second["bestblock"])
    for k in FIELDS:
        assert replayed[k] == second[k], k

    # Every rev record verifies against its block's parent, and holds the undo bytes Core wrote.
    parents = {block_hash(b): b[4:36] for b in blocks}
    core = by_block(rev_records(src / "regtest" / "blocks"), parents)
    if not replaced:
        ours = by_block(rev_records(net / "blocks"), parents)
        assert len(ours) == STOP
        assert all(ours[h] == core[h] for h in ours)
    undo = json.loads(run_cli(cli, "undo", "-q", "--json", "--hex", "--datadir", new).stdout)
    assert len(undo["blocks"]) == STOP, "`ibdkit undo` reads every record, checksums verified"
    core_undo = json.loads(run_cli(cli, "undo", "-q", "--json", "--hex", "--datadir", src).stdout)
    assert [b["hex"] for b in undo["blocks"]] == [b["hex"] for b in core_undo["blocks"][:STOP]], "Core's undo bytes, by the index"
    for name, datadir in (("ours", new), ("core", src)):
        run_cli(cli, "export", "inputs", "-q", "--datadir", datadir, "--format", "csv", "--to", str(STOP),
                "--out", tmp_path / f"{name}.csv")
    assert (tmp_path / "ours.csv").read_bytes() == (tmp_path / "core.csv").read_bytes(), "`export` reads it as Core's"
    stored = [block_hash(p) for _, _, p, _ in framed_records(net / "blocks")]
    assert stored[1:] == [block_hash(b) for b in blocks[:STOP]], "the genesis, then the chain in height order"

    # Core's engine reads every block's undo data through the index ibdkit wrote (checking each
    # record's checksum as it reads it): the coins Core's engine spent for the same blocks.
    read_by_core = cores_spent_outputs(new)
    spent_by_core = cores_spent_outputs(src)
    assert sorted(read_by_core) == list(range(1, STOP + 1))
    assert all(read_by_core[h] == spent_by_core[h] for h in read_by_core)
    assert sum(map(len, read_by_core.values())) > 0, "the chain spends coins"

    # Core's engine opens the block index and the chainstate, is at the sync's tip, and goes on.
    ctx = pbk.make_context(pbk.ChainType.REGTEST)
    opts = pbk.ChainstateManagerOptions(ctx, str(net), str(net / "blocks"))
    opts.set_worker_threads_num(1)
    cm = pbk.ChainstateManager(opts)
    chain = cm.get_active_chain()
    assert (chain.height, str(chain.block_tree_entries[chain.height].block_hash)) == (STOP, second["bestblock"])
    del chain
    for raw in blocks[STOP:]:
        cm.process_block(pbk.Block(raw))
    chain = cm.get_active_chain()
    reached = chain.height, str(chain.block_tree_entries[chain.height].block_hash)
    del chain
    del cm  # flushes and closes
    assert reached == (height, tip)
    got = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", net / "chainstate", "--json").stdout)
    for k in FIELDS:
        assert got[k] == expected[k], k


@pytest.fixture(scope="module")
def hints(cli, source, tmp_path_factory):
    """A hintsfile of the source chain at height SWIFTSYNC_N."""
    tmp = tmp_path_factory.mktemp("hints")
    cs = tmp / "cs"
    run_cli(cli, "replay", "-q", "--datadir", source[0], "--chainstate", cs, "--stop-height", str(SWIFTSYNC_N), "--no-stats")
    run_cli(cli, "hints", "-q", "--chainstate", cs, "--datadir", source[0], "--out", tmp / "n.hints")
    return tmp / "n.hints"


@pytest.mark.parametrize("lies", [(), ("coin amount",), ("coin amount", "coin amount")], ids=["honest", "liar", "two liars"])
def test_a_swiftsync_sync_writes_the_datadir_core_takes_over(cli, source, hints, tmp_path, lies):
    """Blocks 1..n with undo data from the peers' spent coins (BIP 455), then the classic rest: the
    same datadir as a classic sync's. Peers whose coins only the aggregate catches are found and
    their blocks' undo data replaced by an honest peer's (two liars: by the one whose coins balance)."""
    new = tmp_path / "node"
    honest, upstream = Peer(cli, "--datadir", source[0]), Peer(cli, "--datadir", source[0])
    liars = [proxy(upstream.port, lie) for lie in lies]
    ports = [liar.port for liar in liars] + [honest.port]
    try:
        r = sync(cli, ports[0], new, "--swiftsync", hints, "--stop-height", str(STOP), "--assumevalid", "0", "--window", "4",
                 *[a for p in ports[1:] for a in ("--connect", f"127.0.0.1:{p}")])
        got = json.loads(r.stdout)
    finally:
        for liar in liars:
            liar.close()
        honest.stop()
        upstream.stop()
    assert got["swiftsync"]["ok"] and got["swiftsync_height"] == SWIFTSYNC_N, got
    assert got["height"] == STOP
    for i, liar in enumerate(liars):
        assert liar.lies > 0 and got["peers"][i]["dropped"], got["peers"]
    assert f"bitcoind -datadir={new} -chain=regtest" in r.stderr, r.stderr
    assert_core_takes_over(cli, source, new, got, tmp_path, replaced=bool(lies))


def test_sync_refuses_a_datadir_it_did_not_write(cli, source, tmp_path):
    src = source[0]
    r = run_cli(cli, "sync", "--connect", "127.0.0.1:1", "--datadir", src, check=False)
    assert r.returncode == 64, r.stderr
    assert "is inside the Bitcoin Core data directory" in r.stderr, r.stderr
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    r = run_cli(cli, "sync", "--connect", "127.0.0.1:1", "--datadir", other, check=False)
    assert r.returncode == 64 and "holds other files" in r.stderr, r.stderr
    # A rerun takes the network from the chainstate an earlier run recorded in the folder.
    signet = tmp_path / "signet-node"
    (signet / "signet" / "chainstate").mkdir(parents=True)
    (signet / "signet" / "chainstate" / "IBDKIT_CHAINSTATE").write_text("written by ibdkit\nnetwork=signet\n")
    r = run_cli(cli, "sync", "--connect", "127.0.0.1:1", "--datadir", signet, "--timeout", "2", check=False)
    assert r.returncode == 1 and "connect" in r.stderr, r.stderr


def test_python_sync_writes_a_datadir_too(cli, source, hints, tmp_path):
    """``ibdkit.sync(datadir=...)`` writes what ``sync --datadir`` writes, with ``swiftsync=`` too
    (rerun after a KeyboardInterrupt during SwiftSync's chainstate write), and refuses the same."""
    ibdkit = import_ibdkit()
    src, _, height, tip, expected = source
    server = Peer(cli, "--datadir", src)
    phases = []

    def stop_in_the_write(p):
        phases.append(p["phase"])
        if p["phase"] == "write":
            raise KeyboardInterrupt

    try:
        got = ibdkit.sync(f"127.0.0.1:{server.port}", network="regtest", datadir=tmp_path / "py", timeout=20, progress=False)
        # Ctrl-C while SwiftSync writes the accepted coins (the blocks and their index already on
        # disk): the chainstate is discarded and the folder left as found, so the same call reruns.
        with pytest.raises(KeyboardInterrupt):
            ibdkit.sync([f"127.0.0.1:{server.port}"], network="regtest", datadir=tmp_path / "ss", swiftsync=hints, timeout=20,
                        progress=stop_in_the_write)
        assert phases[0] == "check" and phases[-1] == "write", phases
        assert not (tmp_path / "ss").exists() or not any((tmp_path / "ss").iterdir()), list((tmp_path / "ss").rglob("*"))
        fast = ibdkit.sync([f"127.0.0.1:{server.port}"], network="regtest", datadir=tmp_path / "ss", swiftsync=hints,
                           timeout=20, progress=False)
    finally:
        server.stop()
    assert (got["height"], got["bestblock"]) == (height, tip)
    assert (fast["swiftsync_height"], fast["height"], fast["bestblock"]) == (SWIFTSYNC_N, height, tip)
    for new in ("py", "ss"):
        assert (tmp_path / new / "regtest" / "chainstate").is_dir()
        replayed = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", tmp_path / new).stdout)
        for k in FIELDS:
            assert replayed[k] == expected[k], (new, k)
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.sync("127.0.0.1:1", network="regtest", datadir=src, progress=False)
    assert e.value.kind == "Refused" and "is inside the Bitcoin Core data directory" in e.value.message, e.value.message


def test_core_opens_what_a_killed_sync_leaves(cli, source, tmp_path):
    """sync --datadir killed (SIGKILL) at random moments (test_kill_campaign's seed and count: a few
    kills, 50 with IBDKIT_LONG_TESTS=1): Core's engine, shown a copy of what is left, loads it at a
    block of the chain (or refuses it; never another chain), and the rerun completes on the classic
    replay's UTXO set."""
    from test_kill_campaign import KILLS, SEED
    seed = SEED
    rng = random.Random(f"{seed}-sync-datadir")
    src, blocks, height, tip, expected = source
    on_chain = {block_hash(b): h for h, b in enumerate(blocks, start=1)}
    server = Peer(cli, "--datadir", src)
    outcomes = []
    try:
        args = [str(cli), "sync", "-q", "--connect", f"127.0.0.1:{server.port}", "--network", "regtest", "--timeout", "20",
                "--dbcache", "1"]
        t0 = time.monotonic()
        run_cli(cli, *args[1:], "--datadir", tmp_path / "ref")
        budget = 1.2 * (time.monotonic() - t0)
        for i in range(KILLS):
            new = tmp_path / f"killed{i}"
            p = subprocess.Popen([*args, "--datadir", str(new)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            delay = rng.uniform(0, budget)
            time.sleep(delay)
            p.kill()
            p.communicate(timeout=60)
            where = f"seed {seed} (IBDKIT_TEST_SEED), round {i}, SIGKILL after {delay:.3f} s"
            if (new / "regtest" / "chainstate").is_dir() and (new / "regtest" / "blocks" / "index").is_dir():
                shown = tmp_path / f"shown{i}"
                shutil.copytree(new, shown)
                net = shown / "regtest"
                try:
                    ctx = pbk.make_context(pbk.ChainType.REGTEST)
                    opts = pbk.ChainstateManagerOptions(ctx, str(net), str(net / "blocks"))
                    opts.set_worker_threads_num(1)
                    cm = pbk.ChainstateManager(opts)
                except Exception as e:  # refused cleanly: no chainstate Core's engine would use
                    outcomes.append(f"refused ({type(e).__name__})")
                else:
                    chain = cm.get_active_chain()
                    at = chain.height, str(chain.block_tree_entries[chain.height].block_hash)
                    del chain
                    del cm
                    assert at[0] == 0 or on_chain.get(at[1]) == at[0], (at, where)
                    outcomes.append("loaded")
            else:
                outcomes.append("nothing yet")
            r = run_cli(cli, *args[1:], "--datadir", new, check=False)
            assert r.returncode == 0, (r.stderr, where)
            got = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", new).stdout)
            for k in FIELDS:
                assert got[k] == expected[k], (k, where)
    finally:
        server.stop()
    print(f"sync --datadir killed: seed {seed}: {outcomes}")


def test_the_blocks_a_sync_wrote_leave_the_page_cache_once_on_disk(cli, source, tmp_path):
    """Nothing in a sync reads its blocks again: their pages go back to the kernel once durable, so
    that hundreds of gigabytes of blocks do not push the chainstate's files out of the cache."""
    if subprocess.run(["stat", "-f", "-c", "%T", tmp_path], capture_output=True, text=True).stdout.strip() == "tmpfs":
        pytest.skip("on tmpfs a file's pages are the file: nothing to hand back")
    new = tmp_path / "node"
    server = Peer(cli, "--datadir", source[0])
    try:
        sync(cli, server.port, new, "--stop-height", str(STOP), "-q")
    finally:
        server.stop()
    files = sorted((new / "regtest" / "blocks").glob("*[0-9].dat"))
    assert [f.name for f in files] == ["blk00000.dat", "rev00000.dat"]
    for f in files:
        res, size = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "-o", "RES,SIZE", f], check=True,
                                   capture_output=True, text=True).stdout.split()
        assert int(size) > 0 and int(res) == 0, (f.name, res, size)
