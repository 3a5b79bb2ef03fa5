"""Differential: `ibdkit replay --swiftsync` in coins mode over data directories that Bitcoin Core's
engine wrote (blocks, block index, rev files). The UTXO set it writes has Core's statistics and the
classic replay's; it verifies the same scripts; Core's engine continues from the chainstate it
wrote; wrong hints and tampered rev data are refused and leave no chainstate behind."""
import dataclasses
import hashlib
import json
import shutil

import pytest

from conftest import import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import (FIELDS, MAGIC, START, block_hash, core_continues, core_datadir, framed_records,  # noqa: E402
                                 records, snapshot)
from test_swiftsync_hints import parse_lists, hintsfile  # noqa: E402


def swiftsync(cli, *args, check=True):
    return run_cli(cli, "replay", "-q", "--json", *[str(a) for a in args], check=check)


def good_and_wrong_hints(cli, datadir, height, tmp_path):
    """The datadir's hintsfile, and a copy with one hinted-unspent output left out of its last list
    that has one (a wrong hint: SwiftSync refuses it, the chain itself is valid)."""
    good = tmp_path / "good.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", good)
    lists = parse_lists(good.read_bytes(), height)
    h = next(h for h in range(height, 0, -1) if lists[h - 1])
    lists[h - 1] = lists[h - 1][1:]
    wrong = tmp_path / "wrong.hints"
    wrong.write_bytes(hintsfile(lists))
    return good, wrong


def gen_blocks(cli, tmp_path, blocks, seed):
    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", str(blocks), "--target-mb", "3", "--seed", str(seed),
            "--start-time", str(START), "--no-progress", "--json")
    out = records(tmp_path / "chain" / "blocks")
    if out and block_hash(out[0]) == "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206":
        out = out[1:]  # Core writes its own genesis
    return out


def test_coins_mode_on_cores_signed_chain_verifies_every_script(cli, shared, tmp_path):
    """Core's regtest test chain (real signatures): every script verified, as the classic replay
    verifies them; the UTXO set is Core's; the datadir stays byte-identical."""
    raw = (shared / "regtest" / "core_kernel_blocks_1-206.blk").read_bytes()
    blocks, pos = [], 0
    while pos + 8 <= len(raw) and raw[pos:pos + 4] == MAGIC:
        size = int.from_bytes(raw[pos + 4:pos + 8], "little")
        blocks.append(raw[pos + 8:pos + 8 + size])
        pos += 8 + size
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=11)
    assert height == 206
    hints = tmp_path / "utxo.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", hints)
    before = snapshot(datadir)

    cs = tmp_path / "swift"
    got = json.loads(swiftsync(cli, "--swiftsync", hints, "--datadir", datadir, "--chainstate", cs, "--assumevalid", "0",
                               "--threads", "2").stdout)
    assert got["swiftsync"]["ok"] and got["swiftsync"]["mode"] == "coins", got["swiftsync"]
    assert (got["height"], got["bestblock"]) == (height, tip)
    for k in FIELDS:
        assert got[k] == exp[k], k
    classic = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", datadir, "--assumevalid", "0").stdout)
    assert got["hash_serialized_3"] == classic["hash_serialized_3"]
    assert got["script_checked_inputs"] == classic["script_checked_inputs"] > 0, "the same inputs' scripts verified"
    assert got["script_check_reason"] == "assumevalid=0 (always verify)"
    assert snapshot(datadir) == before, "the data directory is byte-identical, with no new file"
    assert (cs / "IBDKIT_CHAINSTATE").exists()

    # Without --chainstate: the statistics from a temporary chainstate, removed after.
    again = json.loads(swiftsync(cli, "--swiftsync", hints, "--datadir", datadir, "--threads", "1", "--assumevalid", "0").stdout)
    assert again["hash_serialized_3"] == exp["hash_serialized_3"]



def test_core_continues_from_the_chainstate_swiftsync_wrote(cli, tmp_path):
    """Hints for height 150 of a 170-block chain; SwiftSync's chainstate at 150 is adopted by Core's
    engine, which connects 151..170 on its coins (blocks 1..140 wiped from Core's files first)."""
    blocks = gen_blocks(cli, tmp_path, 170, seed=41)
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=12)
    assert height == 170
    at150 = tmp_path / "at150"
    run_cli(cli, "replay", "-q", "--datadir", datadir, "--chainstate", at150, "--stop-height", "150")
    hints = tmp_path / "h150.hints"
    run_cli(cli, "hints", "-q", "--chainstate", at150, "--datadir", datadir, "--out", hints)

    ours = tmp_path / "ours"
    got = json.loads(swiftsync(cli, "--swiftsync", hints, "--datadir", datadir, "--chainstate", ours, "--threads", "2").stdout)
    assert got["swiftsync"]["ok"] and got["height"] == 150
    classic = json.loads(run_cli(cli, "utxo", "stats", "--json", "--chainstate", at150).stdout)
    assert got["hash_serialized_3"] == classic["hash_serialized_3"]

    net, height_reached, tip_reached = core_continues(tmp_path, datadir, ours, blocks, wipe_to=140)
    assert (height_reached, tip_reached) == (170, tip), "every block after 150 connects on SwiftSync's coins"
    final = json.loads(run_cli(cli, "utxo", "stats", "--json", "--chainstate", net / "chainstate", "--network", "regtest").stdout)
    assert final["hash_serialized_3"] == exp["hash_serialized_3"]

    # The same through the Python API, as a distributed run ends: ranges in coins mode, their
    # partials combined, their unspent runs written as the chainstate; Core's engine continues.
    from conftest import import_ibdkit
    import_ibdkit()
    from ibdkit import swiftsync as ss
    salt = ss.Salt.new()
    parts = [ss.check_range(datadir, hints, salt, a, b, mode="coins") for a, b in ((1, 70), (71, 150))]
    verdict = ss.combine(parts, 150, "regtest", mode="coins")
    assert verdict.ok, verdict.reason
    py = tmp_path / "py-cs"
    assert ss.write_chainstate(parts, py, verdict, source=datadir) == classic["txouts"]
    stats = json.loads(run_cli(cli, "utxo", "stats", "--json", "--chainstate", py).stdout)
    assert (stats["hash_serialized_3"], stats["height"]) == (classic["hash_serialized_3"], 150)
    net, height_reached, tip_reached = core_continues(tmp_path / "py", datadir, py, blocks, wipe_to=140)
    assert (height_reached, tip_reached) == (170, tip)


def tamper_rev(blocks_dir, blocks):
    """Changes the last byte (a spent coin's script) of the undo record of the first block with
    inputs, and writes its checksum again, as an attacker would: the record still checks."""
    key_path = blocks_dir / "xor.dat"
    key = key_path.read_bytes() if key_path.exists() else bytes(8)
    hashes = [bytes(32)] + [bytes.fromhex(block_hash(b))[::-1] for b in blocks]
    for name, offset, payload, trailer in framed_records(blocks_dir, "rev*.dat", trailer=32):
        if payload == b"\x00":
            continue  # a block without inputs
        prev = next(p for p in hashes if hashlib.sha256(hashlib.sha256(p + payload).digest()).digest() == trailer)
        tampered = payload[:-1] + bytes([payload[-1] ^ 0x01])
        checksum = hashlib.sha256(hashlib.sha256(prev + tampered).digest()).digest()
        path = blocks_dir / name
        data = bytearray(path.read_bytes())
        for i, b in enumerate(tampered + checksum):
            data[offset + i] = b ^ key[(offset + i) % 8]
        path.write_bytes(bytes(data))
        return
    raise AssertionError("no rev record with inputs")


def test_wrong_hints_and_tampered_rev_data_are_refused(cli, tmp_path):
    blocks = gen_blocks(cli, tmp_path, 120, seed=42)
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=13)
    good = tmp_path / "good.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", good)
    lists = parse_lists(good.read_bytes(), height)

    def refused(hints_path, data=datadir, *more):
        cs = tmp_path / "cs"
        r = swiftsync(cli, "--swiftsync", hints_path, "--datadir", data, "--chainstate", cs, *more, check=False)
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert "ibdkit: error: " in r.stderr, "a failing exit says so on stderr"
        assert not json.loads(r.stdout)["swiftsync"]["ok"]
        assert not cs.exists(), "a refused history leaves no chainstate"
        return json.loads(r.stdout)["swiftsync"]["reason"]

    # An unspent output left out of the hints; a spent one hinted unspent.
    h = next(h for h in range(height, 0, -1) if lists[h - 1])
    dropped = [list(lst) for lst in lists]
    dropped[h - 1] = dropped[h - 1][1:]
    (tmp_path / "dropped.hints").write_bytes(hintsfile(dropped))
    assert "aggregates differ" in refused(tmp_path / "dropped.hints")
    ok = json.loads(swiftsync(cli, "--swiftsync", good, "--datadir", datadir, "--no-stats").stdout)
    assert ok["swiftsync"]["ok"]
    # The check's throughput per tenth of the block bytes: slices in order, ending at n.
    tenths = ok["throughput_by_decile"]
    assert 1 <= len(tenths) <= 10 and tenths[0]["height_from"] == 1 and tenths[-1]["height_to"] == height
    assert all(a["height_to"] + 1 == b["height_from"] for a, b in zip(tenths, tenths[1:]))
    assert all(t["mb_per_s"] > 0 for t in tenths) and 0 < ok["check_seconds"] <= ok["seconds"]
    # The seed's question under SwiftSync: every buffer policy, where DataStream carries only the
    # blocks; the same UTXO set under each, and only the cleansing policies zero the blocks' bytes.
    table = run_cli(cli, "replay", "-q", "--swiftsync", good, "--datadir", datadir, "--policy", "all").stdout
    assert "identical under every policy" in table and table.count("| ") >= 6 * 8, table
    rows = {line.split("|")[1].strip(): line.split("|")[7].strip() for line in table.splitlines()
            if line.startswith("| ") and "policy" not in line}
    assert int(rows["plain"]) == 0 and int(rows["hardened"]) > 0 and int(rows["zero-after-free"]) > 0, rows
    # 22,400 coins sorted in 1 MiB: runs spill and merge, and the set is the same.
    small = json.loads(swiftsync(cli, "--swiftsync", good, "--datadir", datadir, "--threads", "2", "--dbcache", "0").stdout)
    assert small["hash_serialized_3"] == exp["hash_serialized_3"] and small["coins_written"] == exp["txouts"]

    # Rev data changed with its checksum made good again: the sums (or a rule) refuse it.
    bad = tmp_path / "bad"
    shutil.copytree(datadir, bad)
    tamper_rev(bad / "regtest" / "blocks", blocks)
    assert "block-script-verify-flag-failed" in refused(good, bad), "the altered script fails its input's check"
    assert "aggregates differ" in refused(good, bad, "--skip-scripts"), "without scripts, the sums catch it"

    # Coins mode needs rev files; outpoints mode over the bare blocks says what it is.
    r = run_cli(cli, "replay", "-q", "--swiftsync", good, "--blocks-dir", datadir / "regtest" / "blocks", check=False)
    assert r.returncode == 64 and "--swiftsync-mode outpoints" in r.stderr
    out = json.loads(swiftsync(cli, "--swiftsync", good, "--swiftsync-mode", "outpoints", "--blocks-dir",
                               datadir / "regtest" / "blocks").stdout)
    assert out["swiftsync"]["ok"] and out["swiftsync"]["mode"] == "outpoints"
    assert out["hash_serialized_3"] == exp["hash_serialized_3"]


def test_verify_snapshot_proves_a_snapshot_and_refuses_a_changed_one(cli, tmp_path):
    """`utxo verify-snapshot`: Core's own chainstate dumped as a snapshot is proven to be the UTXO
    set at its base block; one byte of a coin's script changed (the file still well formed) is
    refused in coins mode; a snapshot of an earlier height checks against its own base block."""
    blocks = gen_blocks(cli, tmp_path, 120, seed=43)
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=14)
    snap = tmp_path / "utxo.dat"
    run_cli(cli, "utxo", "snapshot", "--chainstate", datadir / "regtest" / "chainstate", "--network", "regtest",
            "--out", snap, "-q")
    before = snapshot(datadir)
    r = json.loads(run_cli(cli, "utxo", "verify-snapshot", snap, "--datadir", datadir, "--json", "--threads", "2",
                           "--assumevalid", "0").stdout)
    assert r["ok"] and (r["height"], r["base"], r["coins"]) == (height, tip, exp["txouts"]), r
    assert r["amount_sat"] == exp["total_amount_sat"] and r["script_checked_inputs"] > 0
    assert r["reason"] is None and (r["policy"], r["network"]) == ("hardened", "regtest"), r
    assert r["bytes_cleansed"] > 0, "the default policy zeroes the blocks' buffers as it frees them"
    plain = json.loads(run_cli(cli, "utxo", "verify-snapshot", snap, "--datadir", datadir, "--json", "--policy", "plain",
                               "--skip-scripts").stdout)
    assert plain["ok"] and (plain["policy"], plain["bytes_cleansed"]) == ("plain", 0), plain
    assert snapshot(datadir) == before

    changed = tmp_path / "changed.dat"
    data = bytearray(snap.read_bytes())
    data[-1] ^= 0x01
    changed.write_bytes(bytes(data))
    bad = run_cli(cli, "utxo", "verify-snapshot", changed, "--datadir", datadir, "--json", check=False)
    assert bad.returncode == 2, bad.stderr
    assert "is not the UTXO set" in json.loads(bad.stdout)["reason"]
    assert bad.stderr.startswith("ibdkit: error: the snapshot is not the UTXO set at its base block: "), bad.stderr
    # Outpoints mode proves the outpoints only: the changed script passes its sums, and the
    # verdict says that the snapshot is not certified (exit 1), never that it is the UTXO set.
    bare = ["--blocks-dir", datadir / "regtest" / "blocks", "--mode", "outpoints"]
    for snap_file in (changed, snap):
        r = run_cli(cli, "utxo", "verify-snapshot", snap_file, *bare, check=False)
        assert r.returncode == 1, r.stderr
        assert "is the UTXO set at its base block" not in r.stdout
        assert "NOT CERTIFIED" in r.stdout and "outpoints mode proved only" in r.stderr, r.stderr
    j = json.loads(run_cli(cli, "utxo", "verify-snapshot", changed, *bare, "--json", check=False).stdout)
    assert (j["ok"], j["outpoints_proven"], j["mode"]) == (False, True, "outpoints"), j
    assert "not certified" in j["reason"]

    at90 = tmp_path / "at90"
    run_cli(cli, "replay", "-q", "--datadir", datadir, "--chainstate", at90, "--stop-height", "90")
    early = tmp_path / "early.dat"
    run_cli(cli, "utxo", "snapshot", "--chainstate", at90, "--out", early, "-q")
    r = json.loads(run_cli(cli, "utxo", "verify-snapshot", early, "--datadir", datadir, "--json").stdout)
    assert r["ok"] and r["height"] == 90


def test_fallback_names_the_cause(cli, tmp_path):
    """--fallback: with a wrong hint the classic replay accepts the chain, so the hints were wrong
    (exit 1); the good hints need no fallback."""
    blocks = gen_blocks(cli, tmp_path, 110, seed=44)
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=15)
    good, wrong = good_and_wrong_hints(cli, datadir, height, tmp_path)
    r = swiftsync(cli, "--swiftsync", wrong, "--datadir", datadir, "--fallback", check=False)
    assert r.returncode == 1 and "ibdkit: error: " in r.stderr, r.stderr
    got = json.loads(r.stdout)
    assert not got["swiftsync"]["ok"]
    assert got["fallback"]["valid"] and got["fallback"]["hash_serialized_3"] == exp["hash_serialized_3"]
    ok = json.loads(swiftsync(cli, "--swiftsync", good, "--datadir", datadir, "--fallback", "--no-stats").stdout)
    assert ok["swiftsync"]["ok"] and ok["fallback"] is None
    r = run_cli(cli, "replay", "-q", "--datadir", datadir, "--fallback", check=False)
    assert r.returncode == 64 and "--fallback goes with --swiftsync" in r.stderr


def test_python_ranges_in_coins_mode_pass_cores_chain_and_refuse_tampered_rev_data(cli, tmp_path):
    """ibdkit.swiftsync in coins mode, as each Dask worker runs it: ranges checked apart, their
    partials carried as bytes (pickled), then combined. Core's datadir passes, with the classic
    replay's scripts and Core's UTXO set; a tampered rev record is refused by the script check, and
    by the sums with skip_scripts; partials of another mode are not combined."""
    import pickle

    import pytest
    from conftest import import_ibdkit

    ibdkit = import_ibdkit()
    from ibdkit import swiftsync as ss

    blocks = gen_blocks(cli, tmp_path, 120, seed=46)
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=16)
    good = tmp_path / "good.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", good)

    def verdict(data, **kw):
        salt = ss.Salt.new()
        parts = [ss.check_range(data, good, salt, a, b, mode="coins", threads=2, **kw) for a, b in ((1, 60), (61, height))]
        parts = [pickle.loads(pickle.dumps(p)) for p in parts]
        assert all(p.mode == "coins" for p in parts)
        return ss.combine(parts, height, "regtest", mode="coins"), parts

    v, parts = verdict(datadir)
    assert v.ok, v.reason
    classic = json.loads(run_cli(cli, "replay", "--json", "--datadir", datadir, "--no-stats").stdout)
    assert v.script_checked_inputs == classic["script_checked_inputs"] == v.counts["inputs"] > 0
    assert ss.unspent_stats(parts)["hash_serialized_3"] == exp["hash_serialized_3"]
    with pytest.raises(ibdkit.ArgumentError, match="checked in mode 'coins'"):
        ss.combine(parts, height, "regtest", mode="outpoints")
    with pytest.raises(ibdkit.ArgumentError, match="a Bitcoin Core data directory"):
        ss.check_range(datadir / "regtest" / "blocks", good, ss.Salt.new(), 1, 2, mode="coins")
    # The CLI's range-by-range check says the same.
    cli_ok = json.loads(run_cli(cli, "swiftsync", "--mode", "coins", "--datadir", datadir, "--hints", good, "--ranges", "3",
                                "--json").stdout)
    assert cli_ok["ok"] and cli_ok["mode"] == "coins" and cli_ok["script_checked_inputs"] == v.script_checked_inputs
    # One field list (run/result_fields.h): the CLI's verdict is Python's Verdict with the policy.
    from test_result_fields import types
    py = dataclasses.asdict(v)
    assert set(cli_ok) - {"policy"} == set(py), set(cli_ok) ^ set(py)
    assert types({k: cli_ok[k] for k in py}) == types(py)
    assert {k: cli_ok[k] for k in py if k != "ranges"} == {k: x for k, x in py.items() if k != "ranges"}
    r = run_cli(cli, "swiftsync", "--mode", "coins", "--blocks-dir", datadir / "regtest" / "blocks", "--hints", good,
                check=False)
    assert r.returncode == 64 and "--mode outpoints" in r.stderr

    bad = tmp_path / "bad"
    shutil.copytree(datadir, bad)
    tamper_rev(bad / "regtest" / "blocks", blocks)
    v, _ = verdict(bad)
    assert not v.ok and "block-script-verify-flag-failed" in v.reason, v.reason
    r = run_cli(cli, "swiftsync", "--mode", "coins", "--datadir", bad, "--hints", good, "--json", check=False)
    assert r.returncode == 2 and "block-script-verify-flag-failed" in json.loads(r.stdout)["reason"]
    v, _ = verdict(bad, skip_scripts=True)
    assert not v.ok and "aggregates differ" in v.reason, v.reason


def test_swiftsync_json_and_python_dict_agree(cli, tmp_path):
    """One field list (include/ibdkit/run/result_fields.h): `replay --swiftsync --json` and
    `ibdkit.replay(..., swiftsync=...)` name and type every field alike, accepted or refused with
    the fallback's verdict, and agree on the deterministic ones."""
    from conftest import import_ibdkit
    from test_result_fields import types
    ibdkit = import_ibdkit()
    blocks = gen_blocks(cli, tmp_path, 40, seed=45)
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=16)
    good, wrong = good_and_wrong_hints(cli, datadir, height, tmp_path)
    for hints, extra in ((good, []), (wrong, ["--fallback"])):
        r = swiftsync(cli, "--swiftsync", hints, "--datadir", datadir, "--threads", "2", "--policy", "secure", *extra,
                      check=False)
        got_cli = json.loads(r.stdout)
        # A run that exits non-zero adds the failure's fields (docs/cli.md), which Python raises or
        # leaves out: the verdict's own fields are the same.
        failure = {"error", "exit_code"}
        assert set(got_cli) & failure == (failure if r.returncode else set()), (r.returncode, set(got_cli) & failure)
        got_cli = {k: v for k, v in got_cli.items() if k not in failure}
        got_py = ibdkit.replay(datadir, swiftsync=hints, threads=2, policy="secure", fallback=bool(extra), progress=False)
        assert set(got_cli) == set(got_py), set(got_cli) ^ set(got_py)
        assert types(got_cli) == types(got_py)
        for k, v in got_py.items():
            if k not in ("seconds", "check_seconds", "throughput_by_decile", "peak_rss_bytes"):
                assert got_cli[k] == v, k
        assert got_py["policy"] == "secure" and got_py["height"] == height and got_py["bestblock"] == tip
    assert got_py["fallback"]["valid"] and got_py["fallback"]["hash_serialized_3"] == exp["hash_serialized_3"]
    assert not got_py["swiftsync"]["ok"] and got_py["swiftsync"]["reason"]


@pytest.mark.parametrize("phase", ["check", "write"])
def test_python_replay_stops_at_a_keyboard_interrupt_in_either_phase(cli, tmp_path, phase):
    """Regression: `ibdkit.replay(..., swiftsync=...)` never looked at Ctrl-C (or a progress callback
    that raises): it checked and wrote everything, kept the chainstate, and only then raised. Now the
    check and the chainstate's write stop, no chainstate claims a height, and the same call completes."""
    from conftest import import_ibdkit
    ibdkit = import_ibdkit()
    blocks = gen_blocks(cli, tmp_path, 40, seed=47)
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=17)
    good, _ = good_and_wrong_hints(cli, datadir, height, tmp_path)
    cs = tmp_path / "cs"
    seen = []

    def interrupt(p):
        seen.append(p["phase"])
        if p["phase"] == phase:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ibdkit.replay(datadir, swiftsync=good, chainstate=cs, progress=interrupt)
    assert seen[-1] == phase and seen.count(phase) == 1, seen
    assert not cs.exists() or (cs / "IBDKIT_UNFINISHED").exists() or not any(cs.iterdir()), list(cs.iterdir())
    got = ibdkit.replay(datadir, swiftsync=good, chainstate=cs, progress=False)
    assert got["swiftsync"]["ok"] and (got["height"], got["bestblock"]) == (height, tip), got
    assert got["hash_serialized_3"] == exp["hash_serialized_3"]
