"""A replay that fails keeps what it did: on a data directory Bitcoin Core's engine wrote, a block
with one flipped byte (rejected, exit 2) or a blk file cut short (a read error, exit 1) ends the run
with every block before it flushed into --chainstate, the height kept said in the output; once the
files are repaired, the same command resumes there and reaches the UTXO hash of a run that never
failed. A chainstate resumed below the failure moves up to it."""
import json
import shutil

import pytest

from conftest import import_pbk, run_cli

import_pbk()

from test_replay_datadir import START, block_hash, core_datadir, framed_records, records  # noqa: E402

BLOCKS = 150
BAD = 130


@pytest.fixture(scope="module")
def chain(cli, tmp_path_factory):
    """Core's datadir of a generated chain (blocks stored out of height order), the height of each
    stored record, and the UTXO hash of the whole chain."""
    root = tmp_path_factory.mktemp("failure")
    run_cli(cli, "gen-chain", "--out", root / "chain", "--blocks", str(BLOCKS), "--target-mb", "3", "--seed", "31",
            "--start-time", str(START), "--no-progress")
    blocks = records(root / "chain" / "blocks")
    if blocks and block_hash(blocks[0]) == "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206":
        blocks = blocks[1:]  # Core writes its own genesis
    datadir, height, _, exp = core_datadir(root, blocks, seed=3)
    assert height == BLOCKS
    by_hash = {block_hash(b): h for h, b in enumerate(blocks, start=1)}
    stored = [(name, offset, len(payload), by_hash.get(block_hash(payload), 0))
              for name, offset, payload, _ in framed_records(datadir / "regtest" / "blocks")]
    return datadir, stored, exp["hash_serialized_3"]


def replay(cli, datadir, cs, *extra):
    r = run_cli(cli, "replay", "-q", "--json", "--datadir", datadir, "--chainstate", cs, *extra, check=False)
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def record_of(stored, height):
    return next((name, offset, size) for name, offset, size, h in stored if h == height)


def test_a_rejected_block_keeps_every_block_before_it(cli, chain, tmp_path):
    datadir, stored, whole = chain
    dd = tmp_path / "dd"
    shutil.copytree(datadir, dd)
    name, offset, size = record_of(stored, BAD)
    blk = dd / "regtest" / "blocks" / name
    original = blk.read_bytes()
    data = bytearray(original)
    data[offset + size - 1] ^= 0x01  # the last transaction's lock time: the merkle root no longer matches
    blk.write_bytes(bytes(data))
    cs = tmp_path / "cs"
    for threads in ("1", "2"):
        shutil.rmtree(cs, ignore_errors=True)
        r, got = replay(cli, dd, cs, "--threads", threads)
        assert r.returncode == 2, r.stderr
        assert (got["reject_height"], got["reject_reason"]) == (BAD, "bad-txnmrklroot"), got
        assert got["height"] == BAD - 1 and got["kept_height"] == BAD - 1, got
        on_disk = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", cs, "--json").stdout)
        assert on_disk["height"] == BAD - 1
    # The human output says what is kept.
    shutil.rmtree(cs)
    r = run_cli(cli, "replay", "-q", "--datadir", dd, "--chainstate", cs, check=False)
    assert r.returncode == 2
    assert f"REJECTED           block at height {BAD}: bad-txnmrklroot" in r.stdout
    assert f"the chainstate is at height {BAD - 1}, where a rerun resumes" in r.stdout
    # Repaired, the same command goes on from there to the hash of an uninterrupted run.
    blk.write_bytes(original)
    r, got = replay(cli, dd, cs)
    assert r.returncode == 0, r.stderr
    assert (got["start_height"], got["height"]) == (BAD, BLOCKS)
    assert got["hash_serialized_3"] == whole


def test_a_block_that_cannot_be_read_keeps_every_block_before_it(cli, chain, tmp_path):
    datadir, stored, whole = chain
    dd = tmp_path / "dd"
    shutil.copytree(datadir, dd)
    # The last blk file cut before its last record (Core stores blocks out of height order: the
    # height of that record is the seed's).
    name, offset, _, first = max(stored)
    assert 10 < first < BLOCKS
    resumed = tmp_path / "resumed"  # a chainstate below the cut block, made while the files were whole
    r, got = replay(cli, dd, resumed, "--stop-height", str(first - 10))
    assert r.returncode == 0 and got["height"] == first - 10
    blk = dd / "regtest" / "blocks" / name
    original = blk.read_bytes()
    blk.write_bytes(original[:offset - 8])
    cs = tmp_path / "cs"
    for threads in ("1", "2"):
        shutil.rmtree(cs, ignore_errors=True)
        r, _ = replay(cli, dd, cs, "--threads", threads)
        assert r.returncode == 1, r.stderr
        assert f"at height {first} (" in r.stderr and "runs past the end of the file" in r.stderr, r.stderr
        assert f"the chainstate {cs} keeps every block before it, up to height {first - 1}: a rerun resumes there" in r.stderr
        assert json.loads(run_cli(cli, "utxo", "stats", "--chainstate", cs, "--json").stdout)["height"] == first - 1
    # The chainstate resumed below the cut moves up to it.
    r, _ = replay(cli, dd, resumed)
    assert r.returncode == 1 and f"up to height {first - 1}: a rerun resumes there" in r.stderr, r.stderr
    assert json.loads(run_cli(cli, "utxo", "stats", "--chainstate", resumed, "--json").stdout)["height"] == first - 1
    blk.write_bytes(original)
    r, got = replay(cli, dd, cs)
    assert r.returncode == 0, r.stderr
    assert (got["start_height"], got["height"]) == (first, BLOCKS)
    assert got["hash_serialized_3"] == whole


def test_a_resumed_chainstate_moves_up_to_the_failure(cli, chain, tmp_path):
    datadir, stored, whole = chain
    dd = tmp_path / "dd"
    shutil.copytree(datadir, dd)
    cs = tmp_path / "cs"
    r, got = replay(cli, dd, cs, "--stop-height", "100")
    assert r.returncode == 0 and got["height"] == 100
    name, offset, size = record_of(stored, BAD)
    blk = dd / "regtest" / "blocks" / name
    original = blk.read_bytes()
    data = bytearray(original)
    data[offset + size - 1] ^= 0x01
    blk.write_bytes(bytes(data))
    r, got = replay(cli, dd, cs, "--threads", "2")
    assert r.returncode == 2, r.stderr
    assert (got["start_height"], got["height"], got["kept_height"]) == (101, BAD - 1, BAD - 1), got
    blk.write_bytes(original)
    r, got = replay(cli, dd, cs)
    assert r.returncode == 0, r.stderr
    assert (got["start_height"], got["height"], got["hash_serialized_3"]) == (BAD, BLOCKS, whole)
