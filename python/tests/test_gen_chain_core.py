"""Generated chains are valid for Bitcoin Core: its engine (py-bitcoinkernel) connects every block
with full validation (scripts included) and ends on our tip. Also: same arguments give the same
bytes, --xor files hold the same blocks, and the default start time puts the tip at about now."""
import json
import pathlib
import time

import pytest

from conftest import run_cli

from conftest import import_pbk  # noqa: E402

pbk = import_pbk()

START = 1_700_000_000  # fixed, so the chain is the same on every run


def gen(cli, out, *args):
    r = run_cli(cli, "gen-chain", "--out", out, "--no-progress", "--json", *args)
    summary = json.loads(r.stdout)
    assert summary == json.loads((pathlib.Path(out) / "chain.json").read_text())
    return summary


def core_chainman(datadir):
    ctx = pbk.make_context(pbk.ChainType.REGTEST)
    opts = pbk.ChainstateManagerOptions(ctx, str(datadir), str(datadir / "blocks"))
    opts.set_worker_threads_num(2)
    return pbk.ChainstateManager(opts)


def tip_of(chainman):
    chain = chainman.get_active_chain()
    return chain.height, str(chain.block_tree_entries[chain.height].block_hash)


def read_records(blocks_dir):
    """Every block of the blk files, deobfuscated with xor.dat when present."""
    key_path = blocks_dir / "xor.dat"
    key = key_path.read_bytes() if key_path.exists() else bytes(8)
    blocks = []
    for f in sorted(blocks_dir.glob("blk*.dat")):
        data = f.read_bytes()
        data = bytes(b ^ key[i % 8] for i, b in enumerate(data)) if any(key) else data
        pos = 0
        while pos < len(data):
            assert data[pos:pos + 4] == bytes.fromhex("fabfb5da")
            size = int.from_bytes(data[pos + 4:pos + 8], "little")
            blocks.append(data[pos + 8:pos + 8 + size])
            pos += 8 + size
    return blocks


def test_core_accepts_generated_chain(cli, tmp_path):
    # 300 blocks: 200 after coinbase maturity, spending P2SH, P2WSH, P2TR script path and
    # coinbase outputs, with witness commitments, up to blocks near the weight limit.
    s = gen(cli, tmp_path / "chain", "--blocks", "300", "--target-mb", "12", "--seed", "3",
            "--start-time", str(START))
    assert s["blocks"] == 300
    for kind in ("p2sh", "p2wsh", "p2tr_script", "coinbase"):
        assert s["spent"][kind] > 0, kind
    for kind, n in s["outputs_by_type"].items():
        assert n > 0, kind
    assert s["witness_blocks"] > 50
    assert s["max_block_weight"] > 3_900_000
    assert s["max_block_weight"] <= 4_000_000

    chainman = core_chainman(tmp_path / "core")
    files = sorted((tmp_path / "chain" / "blocks").glob("blk*.dat"))
    assert chainman.import_blocks(files) == 0
    # import_blocks also succeeds when a block fails to connect: the tip is the verdict.
    assert tip_of(chainman) == (300, s["tip_hash"])
    del chainman


def test_core_accepts_mainnet_profile_chain(cli, tmp_path):
    # The mainnet profile: coins spent in the same block, a few blocks later and hundreds of blocks
    # later, all three eras' output types, coinbases spent late; Core connects it with full
    # validation (scripts included) and ends on our tip.
    s = gen(cli, tmp_path / "chain", "--profile", "mainnet", "--blocks", "600", "--target-mb", "25",
            "--seed", "4", "--start-time", str(START))
    assert s["profile"] == "mainnet"
    assert s["blocks"] == 600
    for kind in ("p2sh", "p2wsh", "p2tr_script", "coinbase"):
        assert s["spent"][kind] > 0, kind
    for kind, n in s["outputs_by_type"].items():
        assert n > 0, kind
    ages = s["spent_by_age"]
    for bucket in ("same_block", "1_6", "7_144", "145_1008"):
        assert ages[bucket] > 0, bucket
    assert s["never_spent_outputs"] > 0.10 * s["outputs"]
    assert s["max_block_weight"] <= 4_000_000

    chainman = core_chainman(tmp_path / "core")
    files = sorted((tmp_path / "chain" / "blocks").glob("blk*.dat"))
    assert chainman.import_blocks(files) == 0
    assert tip_of(chainman) == (600, s["tip_hash"])
    del chainman


def test_core_accepts_mainnet_utxo_chain(cli, tmp_path):
    # --profile mainnet-utxo: the mainnet profile with most bytes in the dust era, whose dust drops
    # pay tens to hundreds of never-spent P2TR/P2WPKH outputs from one coin; Core's engine connects
    # it with full validation and ends on our tip, with the UTXO count gen-chain reports.
    args = ("--blocks", "200", "--target-mb", "20", "--seed", "6", "--start-time", str(START))
    s = gen(cli, tmp_path / "chain", "--profile", "mainnet-utxo", *args)
    plain = gen(cli, tmp_path / "plain", "--profile", "mainnet", *args)
    assert s["profile"] == "mainnet-utxo"
    assert s["blocks"] == 200
    assert s["never_spent_outputs"] > 1.8 * plain["never_spent_outputs"]
    assert s["outputs_by_type"]["p2tr"] + s["outputs_by_type"]["p2wpkh"] > s["outputs"] / 2
    for kind in ("p2sh", "p2wsh", "p2tr_script", "coinbase"):
        assert s["spent"][kind] > 0, kind
    assert s["max_block_weight"] <= 4_000_000

    chainman = core_chainman(tmp_path / "core")
    files = sorted((tmp_path / "chain" / "blocks").glob("blk*.dat"))
    assert chainman.import_blocks(files) == 0
    assert tip_of(chainman) == (200, s["tip_hash"])
    del chainman


@pytest.mark.parametrize("profile", ["default", "mainnet", "mainnet-utxo"])
def test_core_accepts_signed_chain(cli, tmp_path, profile):
    # --signed: every input carries real signatures (P2PKH, P2WPKH, P2TR key path, multisig in
    # P2SH and P2WSH, tapscript); on regtest Core's assumevalid is unset, so its engine verifies
    # every one of them, and ends on our tip.
    s = gen(cli, tmp_path / "chain", "--profile", profile, "--blocks", "400", "--target-mb", "10",
            "--seed", "5", "--start-time", str(START), "--signed")
    assert s["signed"] is True
    signed = s["signed_inputs"]
    assert signed["total"] == s["inputs"] > 1000
    if profile == "default":
        for kind in ("p2pkh", "p2wpkh", "p2tr_key", "multisig", "tapscript"):
            assert signed[kind] > 0, kind
    chainman = core_chainman(tmp_path / "core")
    files = sorted((tmp_path / "chain" / "blocks").glob("blk*.dat"))
    assert chainman.import_blocks(files) == 0
    assert tip_of(chainman) == (400, s["tip_hash"])
    del chainman


def test_mainnet_profile_same_arguments_same_bytes(cli, tmp_path):
    args = ("--profile", "mainnet", "--blocks", "250", "--target-mb", "5", "--seed", "2", "--start-time", str(START))
    a = gen(cli, tmp_path / "a", *args)
    b = gen(cli, tmp_path / "b", *args)
    assert a["tip_hash"] == b["tip_hash"]
    assert (tmp_path / "a" / "blocks" / "blk00000.dat").read_bytes() == (tmp_path / "b" / "blocks" / "blk00000.dat").read_bytes()


def test_core_accepts_xor_chain_block_by_block(cli, tmp_path):
    s = gen(cli, tmp_path / "chain", "--preset", "tiny", "--xor", "--seed", "5", "--start-time", str(START))
    blocks_dir = tmp_path / "chain" / "blocks"
    assert (blocks_dir / "xor.dat").stat().st_size == 8
    raw = (blocks_dir / "blk00000.dat").read_bytes()
    assert raw[:4] != bytes.fromhex("fabfb5da")  # obfuscated
    blocks = read_records(blocks_dir)
    assert len(blocks) == 151  # genesis first, as in Core's blk00000.dat

    chainman = core_chainman(tmp_path / "core")
    for b in blocks[1:]:
        chainman.process_block(pbk.Block(b))
    assert tip_of(chainman) == (150, s["tip_hash"])
    del chainman


def test_same_arguments_same_bytes(cli, tmp_path):
    args = ("--preset", "tiny", "--seed", "11", "--start-time", str(START), "--xor")
    a = gen(cli, tmp_path / "a", *args)
    b = gen(cli, tmp_path / "b", *args)
    assert a["tip_hash"] == b["tip_hash"]
    for name in ("blk00000.dat", "xor.dat"):
        assert (tmp_path / "a" / "blocks" / name).read_bytes() == (tmp_path / "b" / "blocks" / name).read_bytes()
    c = gen(cli, tmp_path / "c", "--preset", "tiny", "--seed", "12", "--start-time", str(START), "--xor")
    assert c["tip_hash"] != a["tip_hash"]


def test_default_start_time_puts_the_tip_near_now(cli, tmp_path):
    s = gen(cli, tmp_path / "chain", "--preset", "tiny")
    # Core rejects blocks more than 2 hours ahead of its clock ("time-too-new").
    assert abs(s["tip_time"] - time.time()) < 3600


def test_bad_start_time_is_explained(cli, tmp_path):
    r = run_cli(cli, "gen-chain", "--out", tmp_path / "x", "--start-time", "1000", check=False)
    assert r.returncode != 0
    assert "start time" in r.stderr
