"""Nothing a user keeps is ever written by accident, and every bad input gets one clear line.

docs/hostile-input.md holds a table: each bad input, what ibdkit says, its exit code. This test runs
every row against a data directory Bitcoin Core's engine wrote (from tests/data/regtest) and a copy
of its chainstate, then points every reading command of the CLI and of the Python module at them,
and checks that both are byte-identical afterwards (contents and modification times, no new file).
"""
import fcntl
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import DATA, ROOT, import_ibdkit, import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import block_hash, core_datadir, framed_records, snapshot  # noqa: E402

TABLE = ROOT / "docs" / "hostile-input.md"
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| (\d+) \|$")


def table_rows():
    rows = [ROW.match(line) for line in TABLE.read_text().splitlines()]
    rows = [(m.group(1), m.group(2), int(m.group(3))) for m in rows if m]
    assert len(rows) >= 30, "docs/hostile-input.md lost its table"
    return rows


def damaged_copy(datadir, root, block):
    """A copy of `datadir` whose record of `block` has its last byte (a lock time) flipped: the
    header, hence the block index's hash, is unchanged, the merkle root no longer matches."""
    bad = root / "broken"
    shutil.copytree(datadir, bad)
    for name, offset, payload, _ in framed_records(bad / "regtest" / "blocks"):
        if block_hash(payload) == block_hash(block):
            f = bad / "regtest" / "blocks" / name
            data = bytearray(f.read_bytes())
            data[offset + len(payload) - 1] ^= 0x01
            f.write_bytes(bytes(data))
            return bad
    raise AssertionError("the block is not in the copy's blk files")


LOCK_HOLDER = """import fcntl, sys
f = open(sys.argv[1], "a+")
fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def places(cli, tmp_path_factory):
    """DD (Core's regtest datadir), COPY (its chainstate, copied), NOTES, FILE, SKELETON, SNAPSHOT
    (DD's UTXO set as a snapshot file), HINTS (a hintsfile of DD's tip), BROKEN (a copy of DD with block 130 damaged), LOCKED (a
    chainstate ibdkit wrote, its LOCK held as a running ibdkit writer holds it) and a TMP per row."""
    root = tmp_path_factory.mktemp("hostile")
    blocks = [payload for _, _, payload, _ in framed_records(DATA / "regtest", pattern="*.blk")]
    datadir, height, _, _ = core_datadir(root, blocks, seed=7)
    assert height == 206
    copy = root / "copy"
    shutil.copytree(datadir / "regtest" / "chainstate", copy)
    notes = root / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("my notes\n")
    file = root / "file.txt"
    file.write_text("not a folder\n")
    skeleton = root / "skeleton"  # what an interrupted `replay --swiftsync` leaves: claims no block
    skeleton.mkdir()
    (skeleton / "IBDKIT_UNFINISHED").write_text("unfinished\n")
    (skeleton / "CURRENT").write_text("MANIFEST-000001\n")
    (skeleton / "IBDKIT_CHAINSTATE").write_text("A chainstate written by ibdkit\nnetwork=regtest\n")
    snap = root / "utxo.snapshot"
    run_cli(cli, "utxo", "snapshot", "--datadir", datadir, "--out", snap, "-q")
    hints = root / "utxo.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", hints)
    broken = damaged_copy(datadir, root, blocks[129])
    locked = root / "locked"
    run_cli(cli, "replay", "-q", "--datadir", datadir, "--chainstate", locked, "--stop-height", 100)
    # The lock is held by a process of its own: this one reads LOCK's bytes (kept()), and closing
    # any descriptor of a file drops every POSIX lock this process holds on it.
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(locked / "LOCK")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    yield {"DD": datadir, "COPY": copy, "NOTES": notes, "FILE": file, "SKELETON": skeleton, "SNAPSHOT": snap, "HINTS": hints,
           "BROKEN": broken, "LOCKED": locked, "root": root}
    holder.stdin.close()
    holder.wait(timeout=60)


FOLDERS = ("DD", "COPY", "NOTES", "SKELETON", "BROKEN", "LOCKED")


def kept(places):
    return ({k: snapshot(places[k]) for k in FOLDERS} |
            {k: places[k].read_bytes() for k in ("FILE", "SNAPSHOT", "HINTS")})


def expand(command, places, tmp):
    def one(word):
        for name in (*FOLDERS, "FILE", "SNAPSHOT", "HINTS", "TMP"):
            if word == name or word.startswith(name + "/"):
                base = tmp if name == "TMP" else places[name]
                return str(base) + word[len(name):]
        return word
    return [one(w) for w in shlex.split(command)]


@pytest.mark.parametrize("command,says,code", table_rows(), ids=[r[0] for r in table_rows()])
def test_hostile_input_table(cli, places, tmp_path, command, says, code):
    before = kept(places)
    r = run_cli(cli, *expand(command, places, tmp_path), check=False)
    assert r.returncode == code, f"exit {r.returncode}, not {code}\n{r.stderr}"
    assert says in r.stderr, r.stderr
    first = r.stderr.splitlines()[0] if r.stderr else ""
    # Exit 0: a read that goes ahead says why in a note; every other row is an error.
    assert first.startswith("ibdkit: error: " if code else "ibdkit: "), r.stderr
    for internal in ("InvalidValue", "Corrupt:", "NotFound:", "Refused:"):
        assert internal not in r.stderr, r.stderr
    assert kept(places) == before
    assert not any(tmp_path.iterdir()) or code == 0, "a refused command wrote into TMP"


def test_every_reading_command_leaves_core_data_byte_identical(cli, places, tmp_path):
    before = kept(places)
    dd, net = places["DD"], places["DD"] / "regtest"
    out = tmp_path
    reads = [
        ["replay", "-q", "--json", "--datadir", dd],
        ["replay", "-q", "--blocks-dir", net / "blocks"],
        ["replay", "-q", "--datadir", dd, "--height", 100, "--dump", "csv", "--out", out / "h.csv"],
        ["utxo", "stats", "--datadir", dd, "--json"],
        ["utxo", "stats", "--chainstate", net / "chainstate", "--hash-type", "both"],
        ["utxo", "stats", "--chainstate", places["COPY"], "--network", "regtest"],
        ["utxo", "dump", "--chainstate", dd, "--format", "sqlite", "--out", out / "u.sqlite"],
        ["utxo", "balances", "--datadir", dd, "--top", 5, "--out", out / "b.csv"],
        ["utxo", "snapshot", "--chainstate", net, "--out", out / "s.dat"],
        ["undo", "--datadir", dd, "--json"],
        ["export", "transactions", "--datadir", dd, "--format", "jsonl", "--out", out / "t.jsonl"],
        ["export", "inputs", "--blocks-dir", net / "blocks", "--format", "csv", "--out", out / "i.csv", "-q"],
        ["hints", "-q", "--datadir", dd, "--out", out / "u.hints"],
        ["swiftsync", "-q", "--hints", out / "u.hints", "--datadir", dd],
        ["replay", "-q", "--swiftsync", out / "u.hints", "--datadir", dd, "--chainstate", out / "swift", "--fallback"],
        ["replay", "-q", "--swiftsync", out / "u.hints", "--swiftsync-mode", "outpoints", "--blocks-dir", net / "blocks"],
        ["utxo", "verify-snapshot", out / "s.dat", "--datadir", dd, "-q"],
    ]
    for args in reads:
        r = run_cli(cli, *args, check=False)
        assert r.returncode == 0, f"{args}: {r.stderr}"
        assert kept(places) == before, args
    r = run_cli(cli, "utxo", "get", "--datadir", dd, "00" * 32 + ":0", check=False)
    assert r.returncode == 1 and "is not in the UTXO set" in r.stdout, r.stderr
    assert kept(places) == before
    # The network comes from the layout: regtest addresses without --network.
    r = run_cli(cli, "utxo", "dump", "--datadir", dd, "--format", "csv", "--out", out / "a.csv")
    assert "bcrt1" in (out / "a.csv").read_text()
    assert kept(places) == before


def test_python_refuses_the_same_and_reads_read_only(places, tmp_path):
    ibdkit = import_ibdkit()
    before = kept(places)
    dd = places["DD"]
    for target in (dd / "regtest" / "chainstate", dd, places["COPY"], places["NOTES"]):
        with pytest.raises(ibdkit.RefusedError) as e:
            ibdkit.replay(dd, chainstate=target, progress=False)
        assert isinstance(e.value, PermissionError) and e.value.kind == "Refused"
        assert "--" not in str(e.value), "messages name Python's arguments, not the CLI's options"
    with pytest.raises(ibdkit.ArgumentError) as e:
        ibdkit.replay(dd, dbcache=-5, progress=False)
    assert "dbcache must be in 0..1048576, got -5" in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(ibdkit.NotFoundError) as e:
        ibdkit.replay(tmp_path / "missing", progress=False)
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(ibdkit.NotFoundError):
        ibdkit.Chainstate(tmp_path / "missing")
    with pytest.raises(ibdkit.Error) as e:
        ibdkit.Chainstate(dd, network="main")
    assert "network=regtest" in str(e.value) and "--network" not in str(e.value)
    cs = ibdkit.Chainstate(dd)
    stats = cs.stats()
    assert stats["height"] == 206
    assert any((c.address or "").startswith("bcrt1") for c in cs), "regtest addresses from the layout"
    with pytest.raises(ibdkit.RefusedError):
        cs.balances(out=dd / "regtest" / "b.csv")
    r = ibdkit.replay(dd, progress=False)
    assert r["hash_serialized_3"] == stats["hash_serialized_3"]
    assert kept(places) == before


def test_ibdkit_continues_only_its_own_chainstate(cli, places, tmp_path):
    dd = places["DD"]
    cs = tmp_path / "cs"
    r = run_cli(cli, "replay", "-q", "--datadir", dd, "--chainstate", cs, "--stop-height", 50)
    assert (cs / "IBDKIT_CHAINSTATE").exists() and "network=regtest" in (cs / "IBDKIT_CHAINSTATE").read_text()
    r = run_cli(cli, "replay", "-q", "--json", "--datadir", dd, "--chainstate", cs)
    assert '"height": 206' in r.stdout
    # A copy of Core's chainstate: refused until marked, then continued (and left as Core's format).
    copy = tmp_path / "copy"
    shutil.copytree(places["COPY"], copy)
    r = run_cli(cli, "replay", "-q", "--datadir", dd, "--chainstate", copy, check=False)
    assert r.returncode == 64 and f"touch {copy / 'IBDKIT_CHAINSTATE'}" in r.stderr
    (copy / "IBDKIT_CHAINSTATE").touch()
    r = run_cli(cli, "replay", "-q", "--json", "--datadir", dd, "--chainstate", copy)
    assert '"blocks_connected": 0' in r.stdout
    assert "network=regtest" in (copy / "IBDKIT_CHAINSTATE").read_text(), "the run records the network it accepted"


def test_progress_only_on_a_terminal(cli, places, tmp_path):
    r = run_cli(cli, "replay", "--datadir", places["DD"], "--no-stats")
    assert "blk/s" not in r.stderr, "no progress line when stderr is not a terminal"
    r = run_cli(cli, "replay", "--datadir", places["DD"], "--no-stats", "--progress")
    assert "height" in r.stderr


def test_quiet_silences_notes(cli, places, tmp_path):
    """-q: nothing on stderr but errors. Notes arise here as beside a running bitcoind (the locks it
    holds, taken on a copy of DD) and from a chainstate of unknown network."""
    dd = tmp_path / "dd"
    shutil.copytree(places["DD"], dd)
    net = dd / "regtest"
    noisy = {
        "undo": ["undo", "--datadir", dd],
        "utxo stats": ["utxo", "stats", "--chainstate", net / "chainstate"],
        "utxo dump": ["utxo", "dump", "--chainstate", places["COPY"], "--format", "csv", "--out", tmp_path / "u.csv"],
        "export": ["export", "blocks", "--datadir", dd, "--format", "csv", "--out", tmp_path / "b.csv"],
    }
    with open(net / ".lock", "a+") as lock, open(net / "chainstate" / "LOCK", "a+") as db_lock:
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as bitcoind holds them
        fcntl.lockf(db_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for name, args in noisy.items():
            loud = run_cli(cli, *args).stderr
            assert loud.startswith(("ibdkit: ", "wrote ")), (name, loud)
            quiet = run_cli(cli, *args, "-q").stderr
            assert quiet == "", (name, quiet)


def test_a_permission_problem_says_so(cli, places):
    # Root reads any folder, so as root the CLI runs as nobody (setpriv, util-linux) on a copy in a
    # folder nobody may enter.
    as_user = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run this as another user: apt-get install util-linux"
        as_user = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    base = pathlib.Path(tempfile.mkdtemp(prefix="ibdkit-perm-", dir="/tmp"))
    try:
        base.chmod(0o755)
        cs = base / "cs"
        shutil.copytree(places["COPY"], cs)
        cs.chmod(0)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        r = subprocess.run([*as_user, str(cli), "utxo", "stats", "--chainstate", str(cs)],
                           capture_output=True, text=True, env=env)
        cs.chmod(0o755)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert r.returncode == 1 and "permission denied" in r.stderr and "LOCK" not in r.stderr, r.stderr
