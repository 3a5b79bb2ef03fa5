"""One set of result fields (include/ibdkit/run/result_fields.h): `ibdkit replay --json` and
`ibdkit.replay(...)` name and type every field alike, and agree on the deterministic ones."""
import json

import pytest

from conftest import import_ibdkit, run_cli

ibdkit = import_ibdkit()

# Fields that do not depend on timing, memory or the machine.
DETERMINISTIC = ("network", "policy", "height", "bestblock", "txouts", "transactions", "bogosize",
                 "total_amount", "total_amount_sat", "hash_serialized_3", "height_source",
                 "blocks_connected", "start_height", "transactions_connected", "inputs", "outputs",
                 "bytes", "interrupted", "threads", "blocks_disconnected", "reorg_fork_height",
                 "undo_records", "undo_bytes", "script_checked_inputs", "script_checks_from_height",
                 "script_check_reason", "bytes_read", "orphans", "stale", "duplicates", "skipped_bytes",
                 "scan_bytes_read", "truncated_records", "reject_reason", "reject_height")


def types(d):
    """Each key's value type; lists and dicts by their items' types."""
    def t(v):
        if isinstance(v, dict):
            return ("dict", tuple(sorted((k, t(x)) for k, x in v.items())))
        if isinstance(v, list):
            return ("list", tuple(sorted({t(x) for x in v}, key=repr)))
        return type(v).__name__
    return {k: t(v) for k, v in d.items()}


@pytest.mark.parametrize("stop_height", [None, 300])
def test_replay_json_and_python_dict_agree(cli, shared, tmp_path, stop_height):
    blocks = shared / "mainnet" / "blk_0-599"
    stop = [] if stop_height is None else ["--stop-height", str(stop_height)]
    got_cli = json.loads(run_cli(cli, "replay", "-q", "--json", "--policy", "secure", "--threads", "2",
                                 "--blocks-dir", blocks, "--chainstate", tmp_path / "cli", *stop).stdout)
    got_py = ibdkit.replay(blocks, policy="secure", threads=2, chainstate=tmp_path / "py",
                           stop_height=stop_height, progress=False)
    assert set(got_cli) == set(got_py), set(got_cli) ^ set(got_py)
    assert types(got_cli) == types(got_py)
    for k in DETERMINISTIC:
        assert got_cli[k] == got_py[k], k
    assert got_py["height"] == (599 if stop_height is None else stop_height)
    assert got_py["total_amount"] == f"{got_py['total_amount_sat'] // 10**8}.{got_py['total_amount_sat'] % 10**8:08d}"
    assert got_py["reject_reason"] is None and got_py["reject_height"] is None
    assert got_py["throughput_by_decile"] and got_cli["throughput_by_decile"]


def test_chainstate_stats_has_the_replays_statistics(shared, tmp_path):
    """Chainstate.stats() names and types the UTXO fields as the replay's result does."""
    got = ibdkit.replay(shared / "mainnet" / "blk_0-599", chainstate=tmp_path / "cs", progress=False)
    stats = ibdkit.Chainstate(tmp_path / "cs").stats()
    for k, v in stats.items():
        assert type(got[k]) is type(v), k
        if k != "height_source":  # the replay names its height, stats() takes the highest coin's
            assert got[k] == v, k
