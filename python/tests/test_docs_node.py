"""docs/node.md is tested: every command of the guide that brings up a node runs as written (the
blocks marked as run by this file, python/tests/doc_examples.py), on a regtest chain of 120 blocks
(those above 100 spend coins) whose datadir Core's engine wrote, and ends where the guide says.

Each command runs in bash with `ibdkit` on PATH the binary under test and HOME a folder of the
test's, where `~/.bitcoin` is that datadir. What the test replaces, and nothing else:
- `--network main` by `--network regtest`;
- `--listen 0.0.0.0:8335` by `--listen 127.0.0.1:0` (a free port; the guide's two peers are two
  `serve` processes over the same datadir);
- the peers 192.0.2.10:8335 and 192.0.2.11:8335 by those two `serve`s; the stock Core peers
  192.0.2.20:8333 and 192.0.2.21:8333 by two `serve --blocks-dir` (no rev files, so no BIP 455,
  as a stock Core);
- `bitcoind`: Core's engine (pbk) opens the datadir and must stand at the sync's tip; where bitcoind
  is installed it is also started on it (with `-chain=regtest` and a private RPC port) and must
  report the same tip.
The mistakes of *When it fails* are made too, each with the cause the guide names: the run fails,
and Core's engine opens what it left at the genesis (no block index names a block). Their wording
and exit codes are not checked: they are another test's (python/tests/test_hostile_input.py).
"""
import json
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import import_pbk, run_cli
from doc_examples import blocks_run_by

pbk = import_pbk()

from test_replay_datadir import FIELDS, core_datadir  # noqa: E402
from test_swiftsync_coins import gen_blocks  # noqa: E402

RUNNER = "python/tests/test_docs_node.py"
GOOD_PEERS = ("192.0.2.10:8335", "192.0.2.11:8335")
STOCK_PEERS = ("192.0.2.20:8333", "192.0.2.21:8333")


def guide():
    """{role: [command lines]} of docs/node.md's blocks run by this file, each found by what it runs."""
    blocks = blocks_run_by(RUNNER, "node.md")
    roles = {}
    for b in blocks:
        lines = [l for l in b.code.splitlines() if l.strip()]
        first = lines[0]
        role = ("serve" if first.startswith("ibdkit serve") else "hints" if first.startswith("ibdkit hints") else
                "bitcoind" if first.startswith("bitcoind ") else
                "stock" if any(p in first for p in STOCK_PEERS) else
                "sync" if first.startswith("ibdkit sync") and "--swiftsync" in first else None)
        assert role and role not in roles, f"{b.where()}: a block this test does not know how to run:\n{b.code}"
        roles[role] = lines
    assert sorted(roles) == ["bitcoind", "hints", "serve", "stock", "sync"], sorted(roles)
    assert all(len(v) == 1 for k, v in roles.items() if k != "stock") and len(roles["stock"]) == 2, roles
    return roles


def local(command, peers=(), stock=()):
    out = command.replace("--network main", "--network regtest").replace("--listen 0.0.0.0:8335", "--listen 127.0.0.1:0")
    for name, port in [*zip(GOOD_PEERS, peers), *zip(STOCK_PEERS, stock)]:
        out = out.replace(name, f"127.0.0.1:{port}")
    return out


class Shell:
    """Commands as a user types them: bash, the binary under test first on PATH, HOME the test's."""

    def __init__(self, cli, home):
        self.home = home
        home.mkdir(exist_ok=True)
        self.env = {"PATH": f"{cli.resolve().parent}:/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C.UTF-8"}

    def run(self, command):
        return subprocess.run(["bash", "-c", command], cwd=self.home, env=self.env, capture_output=True, text=True)

    def background(self, command):
        proc = subprocess.Popen(["bash", "-c", "exec " + command], cwd=self.home, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            proc.kill()
            pytest.fail(f"{command}: no `listening on` line: {line!r} {proc.stderr.read()[-2000:]}")
        return proc, int(line.strip().rsplit(":", 1)[1])


def stop(proc):
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


@pytest.fixture(scope="module")
def node(cli, tmp_path_factory):
    """HOME with `~/.bitcoin` (Core's engine wrote it), the tip, and its UTXO statistics."""
    tmp = tmp_path_factory.mktemp("node-guide")
    blocks = gen_blocks(cli, tmp, 120, seed=41)
    datadir, height, tip, _ = core_datadir(tmp, blocks, seed=7, stats=False)
    home = tmp / "home"
    home.mkdir()
    shutil.move(datadir, home / ".bitcoin")
    expected = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", home / ".bitcoin").stdout)
    assert (expected["height"], expected["bestblock"]) == (height, tip)
    return home, height, tip, expected


@pytest.fixture(scope="module")
def peers(cli, node):
    """The guide's step 1, twice: two `serve`s of `~/.bitcoin`; and two stock peers (no BIP 455)."""
    home = node[0]
    shell = Shell(cli, home)
    serve = guide()["serve"][0]
    started = [shell.background(local(serve)) for _ in GOOD_PEERS]
    stock = [shell.background(f"ibdkit serve --listen 127.0.0.1:0 --blocks-dir {home}/.bitcoin/regtest/blocks")
             for _ in STOCK_PEERS]
    yield [port for _, port in started], [port for _, port in stock]
    for proc, _ in started + stock:
        stop(proc)


@pytest.fixture(scope="module")
def hints(cli, node):
    """The guide's step 2 on the old node, then the file moved to the new machine's HOME."""
    home = node[0]
    r = Shell(cli, home).run(guide()["hints"][0])
    assert r.returncode == 0, r.stderr
    assert (home / "utxo.hints").stat().st_size > 9
    return home / "utxo.hints"


def new_machine(cli, tmp_path, hints):
    shell = Shell(cli, tmp_path / "newnode")
    shutil.copy(hints, shell.home / "utxo.hints")
    return shell


def core_stands_at(net):
    """Core's engine loads NET's block index and chainstate: the height and hash it stands at."""
    ctx = pbk.make_context(pbk.ChainType.REGTEST)
    opts = pbk.ChainstateManagerOptions(ctx, str(net), str(net / "blocks"))
    opts.set_worker_threads_num(1)
    cm = pbk.ChainstateManager(opts)
    chain = cm.get_active_chain()
    at = chain.height, str(chain.block_tree_entries[chain.height].block_hash)
    del chain
    del cm
    return at


def core_opens(net, height, tip):
    at = core_stands_at(net)
    assert at == (height, tip), f"Core's engine opened {net} at {at}, the chain's tip is {(height, tip)}"


def no_node_left(folder, tmp_path, cause):
    """What a failed run left in FOLDER names no block: Core's engine, shown a copy, stands at the
    genesis (or refuses it)."""
    if not (folder / "regtest").exists():
        return
    shown = tmp_path / f"shown-{folder.name}"
    shutil.copytree(folder, shown)
    try:
        at = core_stands_at(shown / "regtest")
    except Exception:  # refused: no node at all
        return
    assert at[0] == 0, f"{cause}: Core's engine opens what the failed run left at {at}"


def assert_utxo_set(cli, chainstate, expected):
    got = json.loads(run_cli(cli, "utxo", "stats", "--json", "--chainstate", chainstate).stdout)
    for k in FIELDS:
        assert got[k] == expected[k], k


def bitcoind_takes_over(shell, command, tip):
    """Where bitcoind is installed: the guide's command, on regtest with a private RPC port; bitcoind
    must report the sync's tip as its best block."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        rpc = s.getsockname()[1]
    common = f"-chain=regtest -rpcport={rpc}"
    proc = subprocess.Popen(["bash", "-c", f"exec {command} {common} -listen=0 -connect=0 -server=1 -printtoconsole=0"],
                            cwd=shell.home, env=shell.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cli = f"bitcoin-cli -datadir={shell.home}/node {common}"
    try:
        best, deadline = None, time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            r = shell.run(f"{cli} -rpcwait -rpcwaittimeout=5 getbestblockhash")
            best = r.stdout.strip()
            if r.returncode == 0:
                break
            time.sleep(0.5)
        ended = proc.stderr.read()[-2000:] if proc.poll() is not None else ""
        assert best == tip, f"bitcoind's best block: {best!r}, the sync's tip {tip}; {ended}"
    finally:
        shell.run(f"{cli} stop")
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_the_guide_brings_up_a_node_core_starts_on(cli, node, peers, hints, tmp_path):
    """Steps 3 and 4: `sync --swiftsync` from two peers into a new datadir; Core's engine (and
    bitcoind where installed) opens it at the chain's tip, on the UTXO set Core's engine wrote."""
    _, height, tip, expected = node
    good, _ = peers
    steps = guide()
    shell = new_machine(cli, tmp_path, hints)
    r = shell.run(local(steps["sync"][0], peers=good))
    assert r.returncode == 0, r.stderr
    assert "bitcoind -datadir=" in r.stderr, f"the run names the command that hands the folder over:\n{r.stderr}"
    net = shell.home / "node" / "regtest"
    assert_utxo_set(cli, net / "chainstate", expected)
    core_opens(net, height, tip)
    assert steps["bitcoind"][0].startswith("bitcoind -datadir=$HOME/node"), steps["bitcoind"]
    if shutil.which("bitcoind") and shutil.which("bitcoin-cli"):
        bitcoind_takes_over(shell, steps["bitcoind"][0], tip)


def test_without_bip455_peers_the_guides_fixes_work(cli, node, peers, hints, tmp_path):
    """Stock peers serve no spent coins: step 3 fails; then the guide's two fixes in the same HOME.
    The classic sync writes a datadir Core's engine opens at the tip (in the folder the failed run
    used); outpoints mode a chainstate on the same UTXO set."""
    _, height, tip, expected = node
    _, stock = peers
    steps = guide()
    shell = new_machine(cli, tmp_path, hints)
    mistaken = steps["sync"][0].replace(GOOD_PEERS[0], STOCK_PEERS[0]).replace(GOOD_PEERS[1], STOCK_PEERS[1])
    failed = shell.run(local(mistaken, stock=stock))
    assert failed.returncode != 0, "SwiftSync with coins needs a peer that serves them"
    print(f"no BIP 455: exit {failed.returncode}: {failed.stderr.strip()[-400:]}")
    no_node_left(shell.home / "node", tmp_path, "no BIP 455")
    classic, outpoints = steps["stock"]
    r = shell.run(local(classic, stock=stock))
    assert r.returncode == 0, r.stderr
    core_opens(shell.home / "node" / "regtest", height, tip)
    r = shell.run(local(outpoints, stock=stock))
    assert r.returncode == 0, r.stderr
    assert_utxo_set(cli, shell.home / "ibdkit-cs", expected)


def test_the_guides_mistakes_leave_no_node(cli, node, peers, hints, tmp_path):
    """*When it fails*: another network than the peers', no reachable peer, hints of another chain.
    Each run fails and leaves no block a node would start from; a peer that cannot be reached beside
    one that can does not stop the run, and is named in its result."""
    home, height, tip, _ = node
    good, _ = peers
    sync = local(guide()["sync"][0], peers=good)
    shell = new_machine(cli, tmp_path, hints)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nobody listens there once the socket is closed

    other = tmp_path / "other"
    run_cli(cli, "gen-chain", "--no-progress", "--out", other, "--blocks", "110", "--target-mb", "1", "--seed", "9")
    run_cli(cli, "replay", "-q", "--blocks-dir", other / "blocks", "--chainstate", other / "cs", "--no-stats")
    run_cli(cli, "hints", "-q", "--chainstate", other / "cs", "--blocks-dir", other / "blocks", "--out",
            shell.home / "other.hints")

    mistakes = {
        "another network": sync.replace("--network regtest", "--network testnet4").replace("~/node", "~/n1"),
        "no reachable peer": (sync.replace(f"127.0.0.1:{good[0]}", f"127.0.0.1:{closed}")
                              .replace(f"--connect 127.0.0.1:{good[1]}", "").replace("~/node", "~/n2")),
        "hints of another chain": sync.replace("~/utxo.hints", "~/other.hints").replace("~/node", "~/n3"),
    }
    for cause, command in mistakes.items():
        assert command != sync
        r = shell.run(command + " --timeout 5")
        assert r.returncode != 0, f"{cause}: the run succeeded: {command}\n{r.stdout}"
        print(f"{cause}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
        no_node_left(shell.home / command.split("--datadir ~/")[1].split()[0], tmp_path, cause)

    r = shell.run(sync.replace("--datadir ~/node", f"--connect 127.0.0.1:{closed} --datadir ~/n4") + " --json --timeout 5")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert (got["height"], got["bestblock"]) == (height, tip)
    assert any(str(closed) in json.dumps(u) for u in got["unreachable"]), got["unreachable"]
