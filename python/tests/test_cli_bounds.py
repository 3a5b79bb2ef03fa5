"""Every number the CLI takes has one range and one message, every failing exit says why on stderr,
and what a user types is read as they mean it (issue 57, items 3, 9 and 10).

The cases that need Bitcoin Core's data directory are rows of docs/hostile-input.md
(test_hostile_input.py); these run on a tiny chain gen-chain writes.
"""
import json
import os
import re
import resource
import subprocess

import pytest

from conftest import run_cli

NUMERIC = re.compile(r"^\s+(?:-\w,)?(--[\w-]+) (UINT|INT|FLOAT)\b(.*)")


def commands(cli, path=()):
    """Every command path ("utxo", "stats") the CLI has, from the Subcommands section of --help."""
    out = run_cli(cli, *path, "--help").stdout
    found = []
    if "Subcommands:" in out:
        for line in out.split("Subcommands:", 1)[1].splitlines():
            m = re.match(r"^  (\S+)\s", line)
            if m:
                found += commands(cli, (*path, m.group(1)))
    return found or [path]


def numeric_options(cli):
    """(command path, option, validator text) of every option whose value is a number."""
    for path in commands(cli):
        for line in run_cli(cli, *path, "--help").stdout.splitlines():
            m = NUMERIC.match(line)
            if m:
                yield path, m.group(1), m.group(3)


def test_every_numeric_option_has_one_range_and_one_message(cli):
    """Each number is checked by IntegerIn or NumberIn (help: "INT in [lo, hi]"); a value below or above
    its range is a usage error with the same words, before anything else is looked at."""
    seen = list(numeric_options(cli))
    names = {(" ".join(p), o) for p, o, _ in seen}
    assert ("hints", "--threads") in names and ("gen-chain", "--seed") in names and ("sync", "--timeout") in names
    for path, option, validator in seen:
        m = re.match(r":(INT|NUMBER) in \[(-?[\d.e+]+), (-?[\d.e+]+)\]", validator)
        assert m, f"{' '.join(path)} {option}: no range check ({validator!r})"
        kind, lo, hi = m.groups()
        words = "a whole number" if kind == "INT" else "a number"
        below = str(int(lo) - 1) if kind == "INT" else str(-1 - abs(float(lo)))
        above = str(int(hi) + 1) if kind == "INT" else str(float(hi) * 2 + 1)
        for bad in (below, above, "12abc"):
            r = run_cli(cli, *path, f"{option}={bad}", check=False)
            assert r.returncode == 64, (path, option, bad, r.stderr)
            want = f"ibdkit: error: {option}: expected {words} in [{lo}, {hi}], got '{bad}'"
            assert r.stderr.startswith(want), (path, option, bad, r.stderr)


def test_threads_are_bounded_before_any_work(cli, tmp_path):
    for threads in ("100000", "-1", "1025"):
        r = run_cli(cli, "hints", "--blocks-dir", tmp_path, "--snapshot", tmp_path / "s", "--out", tmp_path / "h",
                    "--threads", threads, check=False)
        assert r.returncode == 64 and f"--threads: expected a whole number in [0, 1024], got '{threads}'" in r.stderr
    assert not any(tmp_path.iterdir())


@pytest.fixture(scope="module")
def chain(cli, tmp_path_factory):
    """A tiny generated chain, its chainstate (network recorded) and a snapshot of it."""
    root = tmp_path_factory.mktemp("bounds")
    run_cli(cli, "gen-chain", "--out", root / "g", "--preset", "tiny", "--start-time", 1600000000, "-q")
    stats = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", root / "g" / "blocks",
                               "--chainstate", root / "cs").stdout)
    run_cli(cli, "utxo", "snapshot", "--chainstate", root / "cs", "--out", root / "s.dat", "-q")
    return {"root": root, "blocks": root / "g" / "blocks", "cs": root / "cs", "snapshot": root / "s.dat",
            "hash": stats["hash_serialized_3"]}


def test_threads_the_system_cannot_start_are_an_error(cli, chain, tmp_path):
    """With an address space too small for 1024 thread stacks the pool cannot start them all: a clear
    error (exit 1) instead of std::terminate, and no temporary hintsfile left behind."""
    out = tmp_path / "u.hints"

    def small_address_space():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([str(cli), "hints", "-q", "--blocks-dir", str(chain["blocks"]), "--chainstate", str(chain["cs"]),
                        "--out", str(out), "--threads", "1024"], capture_output=True, text=True, env=env,
                       preexec_fn=small_address_space)
    assert r.returncode == 1, r
    assert r.stderr.startswith("ibdkit: error: cannot start 1024 threads"), r.stderr
    assert list(tmp_path.iterdir()) == [], "the temporary hintsfile is removed"
    run_cli(cli, "hints", "-q", "--blocks-dir", chain["blocks"], "--chainstate", chain["cs"], "--out", out, "--threads", 2)
    assert out.stat().st_size > 0


def test_threads_zero_is_every_core_in_every_command(cli, chain, tmp_path):
    """`--threads 0` means every core wherever a command takes it (ibdkit/threads.h), and gives the
    same result as one thread: the hintsfile, the snapshot's verdict, the SwiftSync replay's hash."""
    for n in ("0", "1"):
        run_cli(cli, "hints", "-q", "--blocks-dir", chain["blocks"], "--chainstate", chain["cs"], "--out", tmp_path / f"h{n}",
                "--threads", n)
    assert (tmp_path / "h0").read_bytes() == (tmp_path / "h1").read_bytes()
    got = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", chain["blocks"], "--swiftsync", tmp_path / "h0",
                             "--swiftsync-mode", "outpoints", "--threads", "0").stdout)
    assert got["swiftsync"]["ok"] and got["hash_serialized_3"] == chain["hash"]
    r = run_cli(cli, "utxo", "verify-snapshot", chain["snapshot"], "--blocks-dir", chain["blocks"], "--mode", "outpoints",
                "--threads", "0", "--json", check=False)
    assert r.returncode == 1 and json.loads(r.stdout)["outpoints_proven"], r.stderr


def test_threads_help_says_one_meaning_in_every_command(cli):
    """Every command that takes `--threads` says in its help what 0 and 1 mean, in the same words
    (one option, cli/commands.h AddThreadsOption), and the same range."""
    for command in (["replay"], ["sync"], ["run"], ["hints"], ["swiftsync"], ["utxo", "verify-snapshot"]):
        text = " ".join(run_cli(cli, *command, "--help").stdout.split())
        assert "--threads UINT:INT in [0, 1024]" in text, command
        assert "0: every core the process may run on, 1: all on one thread" in text, (command, text)


def test_commands_that_run_once_take_one_named_policy(cli):
    """`hints`, `swiftsync` and `utxo verify-snapshot` read their blocks under one policy
    (cli/commands.h AddOneRunPolicyOption): `all` (a comparison of runs) and an unknown name are
    usage errors before any work, in the same words."""
    for command in (["hints"], ["swiftsync"], ["utxo", "verify-snapshot"]):
        assert "--policy TEXT=hardened" in " ".join(run_cli(cli, *command, "--help").stdout.split()), command
        for name, words in (("all", "all compares runs of replay and sync: name one policy"),
                            ("tidy", "unknown policy 'tidy' (plain, zero-after-free")):
            r = run_cli(cli, *command, "--policy", name, check=False)
            assert r.returncode == 64 and words in r.stderr, (command, name, r.stderr)


def test_threads_zero_counts_the_cores_the_process_may_run_on(cli, chain):
    """`--threads 0` is the cores the process may use, not the machine's: under `taskset -c 0` (as
    under a container's cpuset) a run starts one thread, not one per core it cannot run on."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    args = [str(cli), "replay", "-q", "--json", "--blocks-dir", str(chain["blocks"]), "--threads", "0"]
    alone = subprocess.run(["taskset", "-c", "0", *args], capture_output=True, text=True, env=env)
    assert alone.returncode == 0, alone.stderr
    assert json.loads(alone.stdout)["threads"] == 1
    free = json.loads(subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout)
    assert free["threads"] == len(os.sched_getaffinity(0))


def test_a_leading_tilde_is_the_home_folder(cli, chain, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"} | {"HOME": str(chain["root"])}
    r = subprocess.run([str(cli), "utxo", "stats", "--chainstate", "~/cs", "--json", "--hash-type", "hash_serialized_3"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hash_serialized_3"] == chain["hash"]
    r = subprocess.run([str(cli), "utxo", "stats", "--chainstate=~/missing"], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and f"{chain['root']}/missing" in r.stderr, r.stderr


def test_load_snapshot_takes_the_network_from_the_snapshot(cli, chain, tmp_path):
    r = run_cli(cli, "utxo", "load-snapshot", chain["snapshot"], "--chainstate", tmp_path / "a", "--network", "main",
                "--expect-hash", chain["hash"], check=False)
    assert r.returncode == 1 and "The network of the snapshot (regtest) does not match the network of this node (main)" in r.stderr
    assert not (tmp_path / "a").exists()
    r = run_cli(cli, "utxo", "load-snapshot", chain["snapshot"], "--chainstate", tmp_path / "b", "--expect-hash",
                chain["hash"], "--json", "-q")
    assert json.loads(r.stdout)["hash_serialized_3"] == chain["hash"]
    assert "network=regtest" in (tmp_path / "b" / "IBDKIT_CHAINSTATE").read_text()


def test_quiet_dump_says_nothing(cli, chain, tmp_path):
    loud = run_cli(cli, "utxo", "dump", "--chainstate", chain["cs"], "--format", "csv", "--out", tmp_path / "a.csv")
    assert loud.stderr.startswith("wrote ")
    quiet = run_cli(cli, "utxo", "dump", "--chainstate", chain["cs"], "--format", "csv", "--out", tmp_path / "b.csv", "-q")
    assert quiet.stderr == "" and (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()


def block_at(chain, height):
    """The block at `height` as bytes (blk00000.dat holds the genesis and then each block in order)."""
    data = (chain["blocks"] / "blk00000.dat").read_bytes()
    at = 0
    for _ in range(height):
        at += 8 + int.from_bytes(data[at + 4:at + 8], "little")
    return bytearray(data[at + 8:at + 8 + int.from_bytes(data[at + 4:at + 8], "little")])


def exit_codes_in_help(cli, *command):
    """{"valid": 0, "invalid": 2, ...} from "exit 0 valid, 2 invalid, 1 ..." in a command's help."""
    text = " ".join(run_cli(cli, *command, "--help").stdout.split())
    return {word: int(code) for code, word in re.findall(r"\b([012]) (?:if )?(?:an )?(\w+)", text.split("xit ", 1)[1])}


def test_block_check_exits_as_its_help_says_and_says_why(cli, chain, tmp_path):
    codes = exit_codes_in_help(cli, "block", "check")
    good = tmp_path / "good.bin"
    good.write_bytes(block_at(chain, 1))
    bad_block = block_at(chain, 1)
    bad_block[36] ^= 1  # the merkle root
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bad_block)
    assert run_cli(cli, "block", "check", good, "--network", "regtest").returncode == codes["valid"] == 0
    r = run_cli(cli, "block", "check", bad, "--network", "regtest", "--no-pow", check=False)
    assert r.returncode == codes["invalid"] == 2
    assert r.stderr.startswith("ibdkit: error: block ") and "is invalid: bad-txnmrklroot" in r.stderr, r.stderr
    r = run_cli(cli, "block", "check", tmp_path / "missing.bin", check=False)
    assert r.returncode == codes["unreadable"] == 1 and r.stderr.startswith("ibdkit: error: ")


def test_verify_scripts_exits_as_its_help_says(cli, chain, tmp_path):
    text = " ".join(run_cli(cli, "block", "verify-scripts", "--help").stdout.split())
    assert "Exit 0 if all pass, 2 if an input fails" in text and "1 on unusable input" in text
    block = tmp_path / "b.bin"
    block.write_bytes(block_at(chain, 1))  # block 1 spends nothing: every input passes
    spent = tmp_path / "spent.json"
    spent.write_text("[]")
    assert run_cli(cli, "block", "verify-scripts", block, "--spent", spent, "--network", "regtest").returncode == 0
    spent.write_text("not json")
    r = run_cli(cli, "block", "verify-scripts", block, "--spent", spent, "--network", "regtest", check=False)
    assert r.returncode == 1 and r.stderr.startswith("ibdkit: error: "), r.stderr
    # A block that spends, each input given an OP_RETURN output to spend: every input fails.
    block.write_bytes(block_at(chain, 140))
    decoded = json.loads(run_cli(cli, "block", "decode", block).stdout)
    inputs = sum(len(tx["vin"]) for tx in decoded["tx"][1:])
    assert inputs > 0
    spent.write_text(json.dumps([{"value": 1000, "script_pubkey": "6a"}] * inputs))
    r = run_cli(cli, "block", "verify-scripts", block, "--spent", spent, "--network", "regtest", check=False)
    assert r.returncode == 2 and r.stderr.startswith("ibdkit: error: block "), r.stderr


def test_an_unknown_command_is_named(cli):
    r = run_cli(cli, "frobnicate", check=False)
    assert r.returncode == 64
    assert r.stderr.startswith("ibdkit: error: unknown command 'frobnicate' (one of: bench, block, "), r.stderr
    r = run_cli(cli, "utxo", "frobnicate", "--chainstate", "x", check=False)
    assert r.returncode == 64 and "unknown command 'utxo frobnicate' (one of: stats, get, " in r.stderr, r.stderr


def test_gen_chain_refuses_a_wrapped_seed_and_a_file_for_a_folder(cli, tmp_path):
    r = run_cli(cli, "gen-chain", "--out", tmp_path / "g", "--preset", "tiny", "--seed", "-1", check=False)
    assert r.returncode == 64 and "--seed: expected a whole number in [0, 18446744073709551615], got '-1'" in r.stderr
    assert not (tmp_path / "g").exists()
    file = tmp_path / "f"
    file.write_text("mine\n")
    r = run_cli(cli, "gen-chain", "--out", file, "--preset", "tiny", check=False)
    assert r.returncode == 64 and f"--out {file} is a file, not a folder" in r.stderr, r.stderr
    assert file.read_text() == "mine\n"


def test_a_replay_with_threads_the_system_cannot_start_says_so(cli, chain, tmp_path):
    def small_address_space():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([str(cli), "replay", "-q", "--blocks-dir", str(chain["blocks"]), "--threads", "1024"],
                       capture_output=True, text=True, env=env, preexec_fn=small_address_space)
    assert r.returncode == 1 and r.stderr.startswith("ibdkit: error: cannot start 1024 threads"), r


def test_a_rejected_block_is_said_on_stderr(cli, chain, tmp_path):
    """The last byte of block 100 (its last transaction's lock time) flipped: the header still links,
    the merkle root no longer matches. The result on stdout says REJECTED; stderr says it too."""
    blocks = tmp_path / "blocks"
    blocks.mkdir()
    data = (chain["blocks"] / "blk00000.dat").read_bytes()
    block = block_at(chain, 100)
    at = data.index(bytes(block))
    changed = bytearray(data)
    changed[at + len(block) - 1] ^= 1
    (blocks / "blk00000.dat").write_bytes(bytes(changed))
    r = run_cli(cli, "replay", "-q", "--blocks-dir", blocks, check=False)
    assert r.returncode == 2 and "REJECTED" in r.stdout
    assert r.stderr.startswith("ibdkit: error: block at height 100 is invalid: bad-txnmrklroot"), r.stderr
