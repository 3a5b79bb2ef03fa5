"""Kill campaign: every command that writes results is killed at random moments (SIGKILL, SIGINT,
SIGTERM) and must leave either the old state or the complete new one under the final names, never
a partial file; a signal it can catch ends it with exit 130 and an "ibdkit: interrupted:" message;
a rerun completes with the reference output. A handful of kills per command by default, 50 with
IBDKIT_LONG_TESTS=1; the seed is printed and IBDKIT_TEST_SEED replays it."""
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import time
from collections import Counter

import pytest

from conftest import run_cli

SEED = int(os.environ.get("IBDKIT_TEST_SEED", random.randrange(1 << 32)))
LONG = os.environ.get("IBDKIT_LONG_TESTS", "") not in ("", "0")
KILLS = 50 if LONG else 4
OLD = b"an earlier file under the final name\n"
HEIGHT = 180  # replay --height
GEN = ["--blocks", "240", "--target-mb", "24", "--seed", "11", "--start-time", "1700000000", "--no-progress"]
SIGNALS = [signal.SIGKILL, signal.SIGINT, signal.SIGTERM]


def files_of(d):
    """{relative path: sha256} of every file under d."""
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*")) if p.is_file()}


def sqlite_rows(path):
    with sqlite3.connect(path) as db:
        table = db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchone()[0]
        return db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()


@pytest.fixture(scope="module")
def base(cli, tmp_path_factory):
    """A generated chain, its chainstate at the tip and one at HEIGHT."""
    print(f"kill campaign: seed {SEED} (IBDKIT_TEST_SEED={SEED} replays it), {KILLS} kills per command")
    d = tmp_path_factory.mktemp("kills")
    run_cli(cli, "gen-chain", "--out", d / "chain", *GEN)
    run_cli(cli, "replay", "-q", "--blocks-dir", d / "chain" / "blocks", "--chainstate", d / "cs")
    return d


def kill_round(cli, args, rng, budget, cwd=None):
    """Starts ibdkit ARGS (in `cwd`), signals it after a random fraction of `budget` seconds,
    returns (signal, returncode, stderr, delay)."""
    sig = rng.choice(SIGNALS)
    delay = rng.uniform(0, budget)
    p = subprocess.Popen([str(cli), *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         cwd=cwd)
    time.sleep(delay)
    p.send_signal(sig)
    _, err = p.communicate(timeout=300)
    return sig, p.returncode, err, delay


def outcome(sig, rc, done=0):
    """How a round ended, for the campaign's summary line."""
    return "finished" if rc == done else "killed" if sig == signal.SIGKILL else "caught" if rc == 130 else "at start"


def report(name, outcomes, states):
    print(f"{name}: seed {SEED}: {dict(sorted(Counter(outcomes).items()))}, left {dict(sorted(Counter(states).items()))}")


def check_exit(sig, rc, err, delay, what, done=0):
    """Exit `done` (finished first), 130 with the message (caught), or death by SIGKILL; a catchable
    signal may kill the process only while it is still starting (before main)."""
    where = f"{what}: seed {SEED}, {signal.Signals(sig).name} after {delay:.3f} s, exit {rc}: {err[-800:]}"
    if rc == done:
        return where
    if sig == signal.SIGKILL:
        assert rc == -signal.SIGKILL, where
    elif rc == -sig:
        assert delay < 0.05, where
    else:
        assert rc == 130, where
        assert "ibdkit: interrupted:" in err, where
    return where


def timed(cli, args):
    t = time.monotonic()
    run_cli(cli, *args)
    return time.monotonic() - t


def campaign_on_file(cli, tmp_path, args_for, check_complete, name):
    """Kills `args_for(out)` KILLS times with OLD under `out`: afterwards `out` is OLD or complete
    and only temporaries (NAME.partial-PID) are beside it; the rerun completes."""
    rng = random.Random(f"{SEED}-{name}")
    ref = tmp_path / ("ref-" + name)
    budget = 1.2 * timed(cli, args_for(ref))
    check_complete(ref)
    out = tmp_path / name
    outcomes, states = [], []
    for i in range(KILLS):
        out.write_bytes(OLD)
        sig, rc, err, delay = kill_round(cli, args_for(out), rng, budget)
        where = check_exit(sig, rc, err, delay, f"{name} round {i}")
        outcomes.append(outcome(sig, rc))
        states.append("old" if out.read_bytes() == OLD else "new")
        if out.read_bytes() != OLD:
            check_complete(out)
        elif rc == 0:
            pytest.fail(f"finished, yet the old file is still there ({where})")
        others = {p.name for p in tmp_path.iterdir()} - {out.name, ref.name}
        assert all(o.startswith(out.name + ".partial-") for o in others), (others, where)
        if sig != signal.SIGKILL:
            assert not others, f"a caught signal leaves no temporary: {others} ({where})"
        run_cli(cli, *args_for(out))
        check_complete(out)
        assert {p.name for p in tmp_path.iterdir()} == {out.name, ref.name}, "the rerun removed the dead run's temporary"
    report(name, outcomes, states)


@pytest.mark.parametrize("fmt", ["csv", "sqlite"])
def test_utxo_dump(cli, base, tmp_path, fmt):
    args = lambda out: ["utxo", "dump", "--chainstate", base / "cs", "--format", fmt, "--out", out, "--network", "regtest",
                        "--no-progress"]
    ref = {}

    def complete(path):
        rows = sqlite_rows(path) if fmt == "sqlite" else path.read_bytes()
        ref.setdefault("rows", rows)
        assert rows == ref["rows"], f"{path} differs from the reference (seed {SEED})"
    campaign_on_file(cli, tmp_path, args, complete, f"utxo.{fmt}")


def test_utxo_snapshot(cli, base, tmp_path):
    args = lambda out: ["utxo", "snapshot", "--chainstate", base / "cs", "--out", out, "--network", "regtest", "--no-progress"]
    ref = {}

    def complete(path):
        ref.setdefault("bytes", path.read_bytes())
        assert path.read_bytes() == ref["bytes"], f"{path} differs from the reference (seed {SEED})"
    campaign_on_file(cli, tmp_path, args, complete, "utxo.snapshot")


def test_export_transactions(cli, base, tmp_path):
    args = lambda out: ["export", "transactions", "--blocks-dir", base / "chain" / "blocks", "--format", "csv", "--out", out,
                        "--quiet"]
    ref = {}

    def complete(path):
        ref.setdefault("bytes", path.read_bytes())
        assert path.read_bytes() == ref["bytes"], f"{path} differs from the reference (seed {SEED})"
    campaign_on_file(cli, tmp_path, args, complete, "txs.csv")


def test_hints(cli, base, tmp_path):
    """A SwiftSync hintsfile of the chainstate at the tip: the same inputs give the same bytes."""
    args = lambda out: ["hints", "-q", "--chainstate", base / "cs", "--blocks-dir", base / "chain" / "blocks",
                        "--out", out]
    ref = {}

    def complete(path):
        ref.setdefault("bytes", path.read_bytes())
        assert path.read_bytes() == ref["bytes"], f"{path} differs from the reference (seed {SEED})"
    campaign_on_file(cli, tmp_path, args, complete, "utxo.hints")


def test_hints_from_a_snapshot(cli, base, tmp_path):
    """The same hintsfile from an assumeutxo snapshot of that chainstate: killed, the old file or
    the complete one, equal to the hints of the chainstate itself."""
    snap = tmp_path.parent / (tmp_path.name + ".snapshot")
    run_cli(cli, "utxo", "snapshot", "--chainstate", base / "cs", "--out", snap, "--network", "regtest", "--no-progress")
    from_cs = tmp_path.parent / (tmp_path.name + ".cs-hints")
    run_cli(cli, "hints", "-q", "--chainstate", base / "cs", "--blocks-dir", base / "chain" / "blocks", "--out", from_cs)
    args = lambda out: ["hints", "-q", "--snapshot", snap, "--blocks-dir", base / "chain" / "blocks", "--out", out]

    def complete(path):
        assert path.read_bytes() == from_cs.read_bytes(), f"{path} differs from the chainstate's hints (seed {SEED})"
    campaign_on_file(cli, tmp_path, args, complete, "snap.hints")


def verdict_of(stdout):
    """A --json verdict without its timing."""
    v = json.loads(stdout)
    v.pop("seconds", None)
    return v


def campaign_on_reader(cli, base, tmp_path, args, name):
    """A command that writes nothing (a verdict on stdout), killed KILLS times in an empty working
    folder: it leaves no file there nor changes one under `base`, and the rerun gives the
    reference verdict and exit code. Returns the reference (exit code, verdict)."""
    rng = random.Random(f"{SEED}-{name}")
    before = files_of(base)
    t = time.monotonic()
    r = run_cli(cli, *args, cwd=tmp_path, check=False)
    budget = 1.2 * (time.monotonic() - t)
    ref = (r.returncode, verdict_of(r.stdout))
    outcomes = []
    for i in range(KILLS):
        sig, rc, err, delay = kill_round(cli, args, rng, budget, cwd=tmp_path)
        where = check_exit(sig, rc, err, delay, f"{name} round {i}", done=ref[0])
        outcomes.append(outcome(sig, rc, done=ref[0]))
        assert not list(tmp_path.iterdir()), where
        r = run_cli(cli, *args, cwd=tmp_path, check=False)
        assert (r.returncode, verdict_of(r.stdout)) == ref, (r.stderr, where)
    assert files_of(base) == before, "a reader changed its inputs"
    report(name, outcomes, ["nothing"] * KILLS)
    return ref


def test_verify_snapshot(cli, base, tmp_path):
    """utxo verify-snapshot writes nothing: killed, it leaves no file; rerun, the same verdict. In
    outpoints mode (a blocks directory: coins mode needs a Core datadir's rev files) that verdict
    is exit 1, the outpoints proven and the snapshot not certified."""
    d = tmp_path / "inputs"
    d.mkdir()
    run_cli(cli, "utxo", "snapshot", "--chainstate", base / "cs", "--out", d / "utxo.snapshot", "--network", "regtest",
            "--no-progress")
    (tmp_path / "cwd").mkdir()
    args = ["utxo", "verify-snapshot", d / "utxo.snapshot", "--blocks-dir", base / "chain" / "blocks", "--mode", "outpoints",
            "--json", "-q"]
    rc, verdict = campaign_on_reader(cli, d, tmp_path / "cwd", args, "verify-snapshot")
    assert rc == 1 and verdict["outpoints_proven"] is True and verdict["ok"] is False, verdict


@pytest.fixture(scope="module")
def core_dd(cli, tmp_path_factory):
    """A datadir Core's engine wrote (pbk) of a 200-block signed chain, with its rev files, and its
    UTXO set as a snapshot: (folder holding both, datadir, height, tip, snapshot)."""
    from test_replay_datadir import core_datadir, records  # Core's engine; a skip without it (a failure on CI)

    d = tmp_path_factory.mktemp("core-dd")
    chain = tmp_path_factory.mktemp("core-chain")
    run_cli(cli, "gen-chain", "--out", chain, "--blocks", "200", "--target-mb", "2", "--signed", "--no-genesis", "--seed", "12",
            "--start-time", "1700000000", "-q")
    datadir, height, tip, _ = core_datadir(d, records(chain / "blocks"), seed=5, stats=False)
    run_cli(cli, "utxo", "snapshot", "--chainstate", datadir / "regtest" / "chainstate", "--out", d / "utxo.snapshot", "-q")
    return d, datadir, height, tip, d / "utxo.snapshot"


def test_verify_snapshot_coins(cli, core_dd, tmp_path):
    """utxo verify-snapshot in coins mode (the datadir's rev files, every script of a signed chain
    verified on two threads): killed, it leaves no file and changes nothing in the datadir; rerun,
    the same verdict: the snapshot is the UTXO set at its base block."""
    inputs, datadir, height, tip, snap = core_dd
    args = ["utxo", "verify-snapshot", snap, "--datadir", datadir, "--assumevalid", "0", "--threads", "2", "--json", "-q"]
    rc, verdict = campaign_on_reader(cli, inputs, tmp_path, args, "verify-snapshot coins")
    assert rc == 0 and verdict["ok"] is True and verdict["mode"] == "coins", verdict
    assert (verdict["height"], verdict["base"]) == (height, tip) and verdict["script_checked_inputs"] > 0, verdict


def test_swiftsync_ranges(cli, base, tmp_path):
    """The swiftsync command (ranges checked apart and combined) writes nothing: killed, it leaves
    no file; rerun, the same verdict."""
    d = tmp_path / "inputs"
    d.mkdir()
    run_cli(cli, "hints", "-q", "--chainstate", base / "cs", "--blocks-dir", base / "chain" / "blocks", "--out", d / "utxo.hints")
    (tmp_path / "cwd").mkdir()
    args = ["swiftsync", "--hints", d / "utxo.hints", "--blocks-dir", base / "chain" / "blocks", "--ranges", "5", "--json",
            "-q"]
    rc, verdict = campaign_on_reader(cli, d, tmp_path / "cwd", args, "swiftsync")
    assert rc == 0 and verdict["ok"] is True and verdict["ranges"] == 5, verdict


def test_gen_chain(cli, base, tmp_path):
    """Killed, a generated chain is either complete (identical to the reference) or marked
    incomplete, and then replay refuses it; rerun, it is identical to the reference."""
    rng = random.Random(f"{SEED}-gen-chain")
    reference = files_of(base / "chain" / "blocks")
    ref_json = json.loads((base / "chain" / "chain.json").read_text())
    ref_json.pop("seconds")
    out = tmp_path / "chain"
    budget = 1.2 * timed(cli, ["gen-chain", "--out", out, *GEN])
    outcomes, states = [], []
    for i in range(KILLS):
        sig, rc, err, delay = kill_round(cli, ["gen-chain", "--out", out, *GEN], rng, budget)
        where = check_exit(sig, rc, err, delay, f"gen-chain round {i}")
        blocks = out / "blocks"
        outcomes.append(outcome(sig, rc))
        states.append("marked incomplete" if (blocks / "gen-chain.incomplete").exists() else "complete")
        if (blocks / "gen-chain.incomplete").exists():
            assert rc != 0, where
            r = run_cli(cli, "replay", "-q", "--blocks-dir", blocks, check=False)
            assert r.returncode == 1 and "incomplete generated chain" in r.stderr and "rerun" in r.stderr, (r.stderr, where)
        else:
            assert files_of(blocks) == reference, f"no marker, so the chain must be whole ({where})"
        if (out / "chain.json").exists():
            got = json.loads((out / "chain.json").read_text())
            got.pop("seconds")
            assert got == ref_json, where
        run_cli(cli, "gen-chain", "--out", out, *GEN)
        assert files_of(blocks) == reference, where
        assert sorted(p.name for p in out.iterdir()) == ["blocks", "chain.json"], where
    report("gen-chain", outcomes, states)


def test_replay(cli, base, tmp_path):
    """replay --chainstate CS --height H --dump csv --out F, killed: the chainstate resumes and F is
    the old file or the complete export at H."""
    rng = random.Random(f"{SEED}-replay")
    blocks = base / "chain" / "blocks"
    ref = tmp_path / "ref.csv"
    args = lambda cs, out: ["replay", "-q", "--blocks-dir", blocks, "--chainstate", cs, "--height", HEIGHT, "--dump", "csv",
                            "--out", out]
    budget = 1.2 * timed(cli, args(tmp_path / "ref-cs", ref))
    expected = ref.read_bytes()
    out = tmp_path / "h.csv"
    outcomes, states = [], []
    for i in range(KILLS):
        cs = tmp_path / f"cs{i}"
        out.write_bytes(OLD)
        sig, rc, err, delay = kill_round(cli, args(cs, out), rng, budget)
        where = check_exit(sig, rc, err, delay, f"replay round {i}")
        assert out.read_bytes() in (OLD, expected), where
        outcomes.append(outcome(sig, rc))
        states.append("old" if out.read_bytes() == OLD else "new")
        if rc == 130 and out.read_bytes() == OLD and "resume" not in err and "nothing written" not in err:
            assert "interrupted again" in err or "not written" in err, where
        r = run_cli(cli, *args(cs, out), check=False)
        assert r.returncode == 0, (r.stderr, where)
        assert out.read_bytes() == expected, where
        assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name], where
    report("replay", outcomes, states)


def campaign_on_swiftsync_replay(cli, tmp_path, hints, source, name):
    """replay --swiftsync HINTS SOURCE --chainstate CS, killed KILLS times: CS is absent, empty,
    complete (the reference's UTXO set), or an unfinished skeleton that claims no block (readers
    refuse it); the same command run again on it completes with the reference's hash."""
    rng = random.Random(f"{SEED}-{name}")
    args = lambda cs: ["replay", "-q", "--json", "--swiftsync", hints, *source, "--chainstate", cs]
    t = time.monotonic()
    ref = json.loads(run_cli(cli, *args(tmp_path / "ref-cs")).stdout)
    budget = 1.2 * (time.monotonic() - t)
    stats = lambda cs: run_cli(cli, "utxo", "stats", "--chainstate", cs, "--json", check=False)
    cs = tmp_path / "cs"
    outcomes, states = [], []
    for i in range(KILLS):
        sig, rc, err, delay = kill_round(cli, args(cs), rng, budget)
        where = check_exit(sig, rc, err, delay, f"{name} round {i}")
        outcomes.append(outcome(sig, rc))
        if not cs.exists() or not any(cs.iterdir()):
            states.append("nothing")
        elif (cs / "IBDKIT_UNFINISHED").exists():
            states.append("unfinished")
            r = stats(cs)
            assert r.returncode != 0 and "unfinished chainstate" in r.stderr, (r.stderr, where)
        else:
            states.append("complete")
            r = stats(cs)
            assert r.returncode == 0, (r.stderr, where)
            assert json.loads(r.stdout)["hash_serialized_3"] == ref["hash_serialized_3"], where
            shutil.rmtree(cs)  # a complete chainstate is not written again
        r = run_cli(cli, *args(cs), check=False)
        assert r.returncode == 0, (r.stderr, where)
        assert json.loads(r.stdout)["hash_serialized_3"] == ref["hash_serialized_3"], where
        assert not (cs / "IBDKIT_UNFINISHED").exists(), where
        shutil.rmtree(cs)
    report(name, outcomes, states)
    return ref


def test_replay_swiftsync(cli, base, tmp_path):
    """replay --swiftsync in outpoints mode over a blocks directory."""
    blocks = base / "chain" / "blocks"
    hints = tmp_path / "utxo.hints"
    run_cli(cli, "hints", "-q", "--chainstate", base / "cs", "--blocks-dir", blocks, "--out", hints)
    campaign_on_swiftsync_replay(cli, tmp_path, hints, ["--swiftsync-mode", "outpoints", "--blocks-dir", blocks],
                                 "replay --swiftsync")


def test_replay_swiftsync_coins(cli, core_dd, tmp_path):
    """replay --swiftsync in coins mode over the datadir Core's engine wrote (its rev files, every
    script verified on two threads): the same outcomes, and the reference is Core's own UTXO set."""
    inputs, datadir, height, tip, _ = core_dd
    before = files_of(inputs)
    hints = tmp_path / "utxo.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", hints)
    core = json.loads(run_cli(cli, "utxo", "stats", "--datadir", datadir, "--json").stdout)
    ref = campaign_on_swiftsync_replay(cli, tmp_path, hints, ["--datadir", datadir, "--threads", "2"],
                                       "replay --swiftsync coins")
    assert ref["swiftsync"]["mode"] == "coins" and ref["script_checked_inputs"] > 0, ref
    assert (ref["height"], ref["bestblock"], ref["hash_serialized_3"]) == (height, tip, core["hash_serialized_3"]), ref
    assert files_of(inputs) == before, "the datadir is only read"


def test_sync_datadir(cli, base, tmp_path):
    """sync --datadir NEW from a peer, killed: the block index names only blocks its files hold
    (`replay --datadir` reads every one) and never fewer than the chainstate has connected; the rerun
    appends and ends on the UTXO set of an uninterrupted sync."""
    rng = random.Random(f"{SEED}-sync-datadir")
    server = subprocess.Popen([str(cli), "serve", "--listen", "127.0.0.1:0", "--blocks-dir", base / "chain" / "blocks"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), (line, server.stderr.read()[-2000:] if server.poll() is not None else "")
        port = int(line.strip().rsplit(":", 1)[1])
        args = lambda dd: ["sync", "-q", "--connect", f"127.0.0.1:{port}", "--network", "regtest", "--timeout", "20",
                           "--dbcache", "2", "--datadir", dd]
        budget = 1.2 * timed(cli, args(tmp_path / "ref"))
        replayed = lambda dd: json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", dd).stdout)
        expected = replayed(tmp_path / "ref")
        outcomes, states = [], []
        for i in range(KILLS):
            dd = tmp_path / f"dd{i}"
            sig, rc, err, delay = kill_round(cli, args(dd), rng, budget)
            where = check_exit(sig, rc, err, delay, f"sync --datadir round {i}")
            outcomes.append(outcome(sig, rc))
            net = dd / "regtest"
            if (net / "blocks" / "index" / "CURRENT").exists():
                r = run_cli(cli, "replay", "-q", "--json", "--no-stats", "--datadir", dd, check=False)
                assert r.returncode == 0, (r.stderr, where)
                indexed = json.loads(r.stdout)["height"]
                cs = run_cli(cli, "utxo", "stats", "--chainstate", net / "chainstate", "--json", check=False)
                if cs.returncode == 0:  # a chainstate killed mid-flush is refused until a sync repairs it
                    assert json.loads(cs.stdout)["height"] <= indexed, where
                states.append("indexed")
            else:
                states.append("no index")
            r = run_cli(cli, *args(dd), check=False)
            assert r.returncode == 0, (r.stderr, where)
            got = replayed(dd)
            assert (got["height"], got["hash_serialized_3"]) == (expected["height"], expected["hash_serialized_3"]), where
        report("sync --datadir", outcomes, states)
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
