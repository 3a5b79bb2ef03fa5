"""Differential: `ibdkit replay --datadir` on a data directory written by Bitcoin Core's own engine
(xor'd blk files, a real block index, blocks stored out of height order) reaches exactly Core's UTXO
statistics, and leaves the directory byte-identical with no new file."""
import hashlib
import json
import pathlib
import random
import shutil


from conftest import import_pbk, run_cli

pbk = import_pbk()

from test_coins_differential import expected_stats  # noqa: E402
from chain_model import connect_block, core_transactions  # noqa: E402

START = 1_700_000_000
FIELDS = ("txouts", "transactions", "bogosize", "total_amount_sat", "hash_serialized_3")
MAGIC = bytes.fromhex("fabfb5da")


def framed_records(blocks_dir, pattern="blk*.dat", trailer=0):
    """Every record (magic, size, payload, then `trailer` bytes: 32 for a rev file's checksum) of
    the files matching `pattern`, in file order, deobfuscated with xor.dat when present:
    (file name, payload offset, payload, trailer bytes)."""
    key_path = blocks_dir / "xor.dat"
    key = key_path.read_bytes() if key_path.exists() else bytes(8)
    out = []
    for f in sorted(blocks_dir.glob(pattern)):
        data = f.read_bytes()
        if any(key):
            data = bytes(b ^ key[i % 8] for i, b in enumerate(data))
        pos = 0
        while pos + 8 <= len(data) and data[pos:pos + 4] == MAGIC:
            size = int.from_bytes(data[pos + 4:pos + 8], "little")
            out.append((f.name, pos + 8, data[pos + 8:pos + 8 + size], data[pos + 8 + size:pos + 8 + size + trailer]))
            pos += 8 + size + trailer
    return out


def records(blocks_dir):
    """Every block of the blk files in file order, deobfuscated with xor.dat when present."""
    return [payload for _, _, payload, _ in framed_records(blocks_dir)]


def block_hash(raw):
    return hashlib.sha256(hashlib.sha256(raw[:80]).digest()).digest()[::-1].hex()


def snapshot(root):
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir",
                                       p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def core_datadir(tmp_path, blocks, seed, stats=True):
    """Core's engine builds DATADIR/regtest (Core's layout): all headers first, then the blocks in a
    shuffled order, so Core stores them out of height order. Returns (datadir, height, tip, stats);
    stats=False leaves the statistics out (None): their MuHash in Python is most of the time here."""
    datadir = tmp_path / "core"
    net = datadir / "regtest"
    ctx = pbk.make_context(pbk.ChainType.REGTEST)
    opts = pbk.ChainstateManagerOptions(ctx, str(net), str(net / "blocks"))
    opts.set_worker_threads_num(1)
    cm = pbk.ChainstateManager(opts)
    for raw in blocks:
        state = cm.process_block_header(pbk.BlockHeader(raw[:80]))
        assert state.validation_mode == pbk.ValidationMode.VALID, state
    order = list(blocks)
    random.Random(seed).shuffle(order)
    for raw in order:
        cm.process_block(pbk.Block(raw))
    chain = cm.get_active_chain()
    height = chain.height
    tip = str(chain.block_tree_entries[height].block_hash)
    utxo = {}
    for h in range(1, height + 1) if stats else ():
        block = cm.blocks[chain.block_tree_entries[h]]
        connect_block(utxo, h, core_transactions(block))
        del block
    del chain
    del cm  # flushes and closes: the datadir is complete and unlocked
    return datadir, height, tip, expected_stats(utxo) if stats else None


def core_continues(tmp_path, datadir, chainstate, blocks, wipe_to):
    """Core's engine adopts `chainstate` in a copy of `datadir` (TMP/adopt) whose blocks 1..wipe_to
    are zeroed in Core's files, so that it cannot rebuild the state from the genesis instead, and
    connects the rest of its chain. Returns the copy's network folder and the height and tip reached."""
    adopt = tmp_path / "adopt"
    shutil.copytree(datadir, adopt)
    net = adopt / "regtest"
    shutil.rmtree(net / "chainstate")
    shutil.copytree(chainstate, net / "chainstate")
    by_height = {block_hash(b): h for h, b in enumerate(blocks, start=1)}
    wiped = 0
    for name, offset, payload, _ in framed_records(net / "blocks"):
        if by_height.get(block_hash(payload), 1 << 30) <= wipe_to:
            with open(net / "blocks" / name, "r+b") as f:
                f.seek(offset)
                f.write(bytes(len(payload)))
            wiped += 1
    assert wiped == wipe_to
    ctx = pbk.make_context(pbk.ChainType.REGTEST)
    opts = pbk.ChainstateManagerOptions(ctx, str(net), str(net / "blocks"))
    opts.set_worker_threads_num(1)
    cm = pbk.ChainstateManager(opts)
    cm.import_blocks([])  # activates the best chain from Core's own block files
    chain = cm.get_active_chain()
    reached = chain.height, str(chain.block_tree_entries[chain.height].block_hash)
    del chain
    del cm  # flushes and closes
    return net, *reached


def test_replay_datadir_matches_core_and_is_read_only(cli, tmp_path):
    gen = json.loads(run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "160", "--target-mb", "3",
                             "--seed", "21", "--start-time", str(START), "--no-progress", "--json").stdout)
    blocks = records(tmp_path / "chain" / "blocks")
    if blocks and block_hash(blocks[0]) == "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206":
        blocks = blocks[1:]  # Core writes its own genesis
    assert len(blocks) == 160
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=5)
    assert (height, tip) == (160, gen["tip_hash"])

    core_blocks = datadir / "regtest" / "blocks"
    assert (core_blocks / "xor.dat").exists() and any((core_blocks / "xor.dat").read_bytes()), "Core obfuscates"
    assert (core_blocks / "index" / "CURRENT").exists()
    stored = [block_hash(b) for b in records(core_blocks)]
    by_height = {block_hash(b): h for h, b in enumerate(blocks, start=1)}
    heights = [by_height[h] for h in stored if h in by_height]
    assert len(heights) == 160
    assert heights != sorted(heights), "the blocks must be stored out of height order"

    before = snapshot(datadir)
    r = run_cli(cli, "replay", "-q", "--json", "--datadir", datadir, check=False)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["network"] == "regtest"
    assert got["height"] == height
    assert got["bestblock"] == tip
    for k in FIELDS:
        assert got[k] == exp[k], k
    assert got["bytes_read"] == got["bytes"], "each block's bytes are read from disk once"
    assert got["scan_bytes_read"] == 0, "the index locates the blocks: no blk file is scanned"
    assert snapshot(datadir) == before, "the data directory is byte-identical, with no new file"

    # The same blocks through a bare scan of Core's blocks directory agree.
    bare = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", core_blocks).stdout)
    assert bare["hash_serialized_3"] == exp["hash_serialized_3"]
    assert snapshot(datadir) == before


def test_replay_datadir_errors(cli, tmp_path):
    r = run_cli(cli, "replay", "-q", "--datadir", tmp_path, check=False)
    assert r.returncode != 0 and "no Bitcoin Core block index" in r.stderr
    r = run_cli(cli, "replay", "-q", "--datadir", tmp_path, "--blocks-dir", tmp_path, check=False)
    assert r.returncode == 64 and "or --blocks-dir DIR (its blk files), exactly one" in r.stderr, r.stderr
    r = run_cli(cli, "replay", "--help")
    assert "--datadir" in r.stdout


def test_core_continues_from_a_chainstate_ibdkit_wrote(cli, tmp_path):
    """Core's engine adopts a chainstate `ibdkit replay` wrote (its first flush a bulk load of table
    files: docs/chainstate.md) and connects the rest of the chain on top, spending coins it reads
    from ibdkit's tables. Blocks 1..140 are wiped from Core's files first, so Core cannot have
    rebuilt the state from genesis instead; the statistics of the result are Core's for the chain."""
    gen = json.loads(run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "170", "--target-mb", "3",
                             "--seed", "23", "--start-time", str(START), "--no-progress", "--json").stdout)
    blocks = records(tmp_path / "chain" / "blocks")
    if blocks and block_hash(blocks[0]) == "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206":
        blocks = blocks[1:]
    datadir, height, tip, exp = core_datadir(tmp_path, blocks, seed=9)
    assert (height, tip) == (170, gen["tip_hash"])

    ours = tmp_path / "ours"
    r = run_cli(cli, "replay", "-q", "--json", "--datadir", datadir, "--chainstate", ours, "--stop-height", "150",
                "--threads", "2")
    assert json.loads(r.stdout)["height"] == 150

    net, height_reached, tip_reached = core_continues(tmp_path, datadir, ours, blocks, wipe_to=140)
    assert height_reached == 170, "every block after 150 connects on ibdkit's coins"
    assert tip_reached == tip
    got = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", net / "chainstate", "--json").stdout)
    for k in FIELDS:
        assert got[k] == exp[k], k
