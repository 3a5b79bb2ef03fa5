"""The dbcache budget bounds the whole process: peak RSS <= dbcache + 200 MiB (issue 12).

The replay runs in a child process on a mainnet-shaped chain whose UTXO set is several times the
cache, so the cache fills, flushes and reads coins back from the chainstate; the peak is read from
the kernel (the child's rusage) and compared with what replay reports itself.
"""
import json
import os
import subprocess
import sys
import tempfile

from conftest import run_cli

MiB = 1 << 20
HEADROOM = 200 * MiB  # the fixed part: code, blocks in flight, LevelDB's memtables during a flush


# Linux carries a process's peak RSS across exec from the image it replaced, and a child that
# pytest spawns (vfork) replaces pytest's own image, hundreds of MiB late in the suite. So the
# replay is started by a small launcher process, whose child's peak is the replay's alone.
LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def child_peak_rss(cmd):
    """Runs cmd to completion; returns (stdout, its own peak RSS in bytes, from wait4 in a launcher)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryDirectory() as tmp:
        peak_file = os.path.join(tmp, "peak")
        proc = subprocess.run([sys.executable, "-c", LAUNCHER, peak_file, *cmd], stdout=out, stderr=subprocess.PIPE)
        assert proc.returncode == 0, proc.stderr.decode()
        with open(peak_file) as f:
            peak_kib = int(f.read())  # Linux: KiB
        out.seek(0)
        return out.read().decode(), peak_kib * 1024


def test_peak_rss_stays_within_dbcache_plus_headroom(cli, tmp_path):
    chain = tmp_path / "chain"
    gen = json.loads(run_cli(cli, "gen-chain", "--out", chain, "--profile", "mainnet", "--blocks", "150",
                             "--target-mb", "50", "--seed", "5", "--start-time", "1700000000",
                             "--no-progress", "--json").stdout)
    unspent = gen["outputs"] - gen["inputs"]
    dbcache = 8
    out, kernel_peak = child_peak_rss([str(cli), "replay", "--blocks-dir", str(chain / "blocks"), "--dbcache",
                                       str(dbcache), "--threads", "2", "--json", "-q"])
    r = json.loads(out)
    # The UTXO set is far larger than the cache (~140 bytes a coin): the cache filled and flushed,
    # and coins were read back from disk.
    assert unspent * 100 > 4 * dbcache * MiB
    assert r["flushes"] > 3
    assert 0 < r["flush_seconds"] < r["seconds"]  # the flushes along the way, a part of the connect loop
    assert r["coins_read_from_disk"] > 0
    # What an entry cost when the cache first filled: a node of 72 or 88 bytes, a slot at load
    # <= 0.8, a share of the flush's index (docs/chainstate.md, *What a coin costs*); Core ~140.
    assert r["cache_full_entries"] > 0
    assert 72 + 8 + 4 <= r["cache_full_bytes"] / r["cache_full_entries"] <= 110
    # Replay's own figure is the kernel's.
    assert r["peak_rss_bytes"] == kernel_peak
    assert kernel_peak <= dbcache * MiB + HEADROOM, f"peak RSS {kernel_peak / MiB:.0f} MiB with --dbcache {dbcache}"


def test_json_reports_throughput_by_decile(cli, tmp_path):
    chain = tmp_path / "chain"
    run_cli(cli, "gen-chain", "--out", chain, "--preset", "tiny", "--no-progress")
    r = json.loads(run_cli(cli, "replay", "--blocks-dir", chain / "blocks", "--json", "-q").stdout)
    deciles = r["throughput_by_decile"]
    assert 1 <= len(deciles) <= 10
    # Contiguous, in order, covering every connected block.
    assert deciles[0]["height_from"] == r["start_height"]
    assert deciles[-1]["height_to"] == r["height"]
    for a, b in zip(deciles, deciles[1:]):
        assert b["height_from"] == a["height_to"] + 1
    assert all(d["blocks_per_s"] > 0 and d["mb_per_s"] > 0 for d in deciles)
    assert r["peak_rss_bytes"] > 0
