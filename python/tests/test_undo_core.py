"""Differential: the undo data `ibdkit replay --undo DIR` writes equals, byte for byte and block by block,
the rev-file records Bitcoin Core's own engine writes for the same chain; `ibdkit undo --datadir` reads
Core's records back through its block index; and no undo directory is ever placed inside Core's."""
import json

from conftest import import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import START, block_hash, core_datadir, framed_records, records, snapshot  # noqa: E402
from chain_model import sha256d  # noqa: E402

MAGIC = bytes.fromhex("fabfb5da")



def rev_records(blocks_dir):
    """Every (file, offset, undo bytes, checksum) record of the rev files of a directory."""
    return framed_records(blocks_dir, "rev*.dat", 32)


def by_block(recs, parents):
    """Records keyed by the block whose parent's hash makes the checksum verify (as Core checks it)."""
    out = {}
    for _, _, undo, checksum in recs:
        owners = [h for h, prev in parents.items() if sha256d(prev + undo) == checksum]
        assert len(owners) == 1, "each record's checksum binds it to exactly one block"
        assert owners[0] not in out, "one record per block"
        out[owners[0]] = undo
    return out


def test_replay_undo_matches_cores_rev_records(cli, tmp_path):
    run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", "160", "--target-mb", "3",
            "--seed", "33", "--start-time", str(START), "--no-progress", "--json")
    blocks = records(tmp_path / "chain" / "blocks")
    if block_hash(blocks[0]) == "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206":
        blocks = blocks[1:]
    assert len(blocks) == 160
    # parent hash (internal byte order, as hashed into the checksum) of every block, by display hash
    parents = {block_hash(b): b[4:36] for b in blocks}

    datadir, height, tip, _ = core_datadir(tmp_path, blocks, seed=9)
    assert height == 160
    core_blocks = datadir / "regtest" / "blocks"
    assert any((core_blocks / "xor.dat").read_bytes()), "Core obfuscates its rev files too"
    core = by_block(rev_records(core_blocks), parents)
    assert set(core) == set(parents), "Core wrote undo data for every block but the genesis"

    undo_dir = tmp_path / "undo"
    r = run_cli(cli, "replay", "-q", "--json", "--blocks-dir", tmp_path / "chain" / "blocks", "--undo", undo_dir,
                "--dbcache", "1", check=False)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["height"] == 160 and got["bestblock"] == tip
    assert got["undo_records"] == 160
    assert not (undo_dir / "xor.dat").exists()
    ours_recs = rev_records(undo_dir)
    assert sum(40 + len(u) for _, _, u, _ in ours_recs) == got["undo_bytes"]
    ours = by_block(ours_recs, parents)
    assert set(ours) == set(core)
    spending = [h for h in core if core[h] != b"\x00"]
    assert len(spending) > 40, "the chain's blocks spend coins, so their undo data is not empty"
    for h in core:
        assert ours[h] == core[h], f"undo bytes of block {h} differ from Core's"

    # revindex.dat: 48-byte entries (hash, height, file, position, size) pointing at those records.
    index = (undo_dir / "revindex.dat").read_bytes()
    assert len(index) == 160 * 48
    heights = {block_hash(b): n for n, b in enumerate(blocks, start=1)}
    for i in range(0, len(index), 48):
        e = index[i:i + 48]
        h = e[:32][::-1].hex()
        height_e, file_e, pos_e, size_e = (int.from_bytes(e[32 + 4 * k:36 + 4 * k], "little") for k in range(4))
        assert heights[h] == height_e
        data = (undo_dir / f"rev{file_e:05d}.dat").read_bytes()
        assert data[pos_e - 8:pos_e - 4] == MAGIC
        assert data[pos_e:pos_e + size_e] == core[h]

    # ibdkit reads Core's rev files through Core's block index (read-only), checksums verified.
    before = snapshot(datadir)
    r = run_cli(cli, "undo", "--datadir", datadir, "--json", "--hex", check=False)
    assert r.returncode == 0, r.stderr
    read = json.loads(r.stdout)
    assert read["network"] == "regtest" and read["records"] == 160 and read["without_undo"] == 0
    assert [b["height"] for b in read["blocks"]] == list(range(1, 161))
    for b in read["blocks"]:
        assert bytes.fromhex(b["hex"]) == core[b["hash"]]
    assert read["coins"] > 0
    assert snapshot(datadir) == before, "reading undo leaves Core's datadir byte-identical"

    # Never into Core's directories.
    r = run_cli(cli, "replay", "-q", "--datadir", datadir, "--undo", core_blocks / "undo", check=False)
    assert r.returncode == 64 and "is inside the Bitcoin Core data directory" in r.stderr
    r = run_cli(cli, "replay", "-q", "--blocks-dir", core_blocks, "--undo", core_blocks, check=False)
    assert r.returncode != 0
    assert snapshot(datadir) == before
