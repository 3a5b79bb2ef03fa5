"""SwiftSync over a Dask cluster (``ibdkit.swiftsync.run_dask``): 1..n split into ranges, one
``check_range`` task per range on the workers, the partials gathered and combined here.

Every worker must see the blocks and the hintsfile under the same paths as given here (a shared
filesystem, or identical copies). The salt is drawn here and travels inside each task's arguments
as :class:`WorkerSaltBytes`, whose ``repr``/``str`` hide it, so Dask's logs of a failed task's
arguments cannot show it. ``distributed`` is imported only by the caller (``Client``)."""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _ibdkit
from . import MAX_HEIGHT, MAX_THREADS, PathLike, _error, _existing, _whole
from .swiftsync import (Hints, Partial, Salt, Verdict, WorkerSaltBytes, _check, _check_mode, _blocks, combine,
                        unspent_coins, unspent_stats, unspent_to_arrow, write_chainstate)


def _range_task(source: str, hints_path: str, salt_bytes: WorkerSaltBytes, first: int, last: int, threads: int,
                mode: str, network: Optional[str], collect_unspent: bool, assumevalid: Optional[str],
                skip_scripts: bool) -> Tuple[Partial, str, str]:
    """One range on a worker: the salt rebuilt from its bytes, the range checked, the partial back."""
    salt = Salt.from_worker_bytes(salt_bytes)
    return _check(source, hints_path, salt, first, last, threads, mode, network, collect_unspent, assumevalid,
                  skip_scripts)


@dataclass
class DaskRun:
    """What ``run_dask`` returns: the verdict, the ranges' partials (in height order, each with its
    unspent run unless ``collect_unspent=False``), the ranges, the wall-clock seconds and the hash
    of block n as the workers' blocks have it (None when no range ended at n)."""

    verdict: Verdict
    partials: List[Partial]
    ranges: List[Tuple[int, int]]
    seconds: float
    tip: Optional[str] = None

    def write_chainstate(self, path: PathLike) -> int:
        """The UTXO set at n as a new chainstate at ``path`` (``swiftsync.write_chainstate``): only
        after an accepted verdict. Returns the coins written."""
        return write_chainstate(self.partials, path, self.verdict, tip=self.tip)

    def unspent_stats(self, hash_type: str = "hash_serialized_3") -> Dict[str, Any]:
        """``Chainstate.stats()``'s fields of the UTXO set at n, from the ranges' coins."""
        return unspent_stats(self.partials, hash_type, height=self.verdict.height)

    def unspent_coins(self) -> Iterator[Any]:
        return unspent_coins(self.partials, self.verdict.network)

    def unspent_to_arrow(self, batch_size: int = 65536, *, script_hex: bool = False) -> Iterator[Any]:
        return unspent_to_arrow(self.partials, self.verdict.network, batch_size, script_hex=script_hex)


def _split_by_count(n: int, count: int) -> List[Tuple[int, int]]:
    count = max(1, min(count, n))
    return [(n * i // count + 1, n * (i + 1) // count) for i in range(count)]


def _plan(ranges: Any, n: int, split: str, where: Optional[str], network: Optional[str],
          workers_threads: int) -> List[Tuple[int, int]]:
    if ranges is None:
        ranges = max(1, 2 * workers_threads)
    if isinstance(ranges, int) and not isinstance(ranges, bool):
        _whole("ranges", ranges, 1, MAX_HEIGHT)
        if split == "bytes" and where is not None:
            return [tuple(r) for r in _blocks(where, network).split(n, ranges)]
        return _split_by_count(n, ranges)
    if not isinstance(ranges, (list, tuple)):
        raise TypeError(f"ranges must be an int or a list of (first, last) pairs, got {type(ranges).__name__}")
    out = []
    for r in ranges:
        if not (isinstance(r, (list, tuple)) and len(r) == 2):
            raise TypeError(f"each range must be a (first, last) pair, got {r!r}")
        first, last = _whole("first", r[0], 1, MAX_HEIGHT), _whole("last", r[1], 1, MAX_HEIGHT)
        if not first <= last <= n:
            raise _error(_ibdkit.ArgumentError, "InvalidArgument",
                         f"ranges: ({first}, {last}) is not within the hintsfile's 1..{n}")
        out.append((first, last))
    if not out:
        raise _error(_ibdkit.ArgumentError, "InvalidArgument", "ranges: an empty list")
    return out


def run_dask(client: Any, source: PathLike, hints: Union[Hints, PathLike], *,
             ranges: Union[None, int, Sequence[Tuple[int, int]]] = None, split: str = "bytes",
             threads_per_task: int = 1, mode: str = "outpoints", network: Optional[str] = None,
             collect_unspent: bool = True, retries: int = 2, assumevalid: Optional[Union[str, int]] = None,
             skip_scripts: bool = False) -> DaskRun:
    """Checks blocks 1..n of ``source`` against ``hints`` (n its height) on a Dask cluster.

    client: a ``distributed.Client``. source: a Core datadir or blocks directory, at the same path
    on every worker. hints: a hintsfile path (the same on every worker) or :class:`Hints`.
    ranges: how many ranges (default: twice the cluster's worker threads), or the (first, last)
    pairs themselves (they must cover 1..n once each for an ok verdict). split: "bytes" cuts
    ranges of about equal block bytes (the blocks must be visible here too), "blocks" of equal
    block counts. threads_per_task: ``check_range``'s threads in each task. retries: Dask's
    retries of a task that raised (a task whose worker died is rescheduled by Dask anyway). mode,
    assumevalid, skip_scripts: as in ``check_range`` (coins mode needs a Core datadir: every worker
    reads the spent coins from its rev files).

    A fresh salt is drawn for the run and handed to each task as :class:`WorkerSaltBytes`.
    Returns a :class:`DaskRun`; its verdict is ``combine`` over the gathered partials.
    """
    _check_mode(mode)
    if not (hasattr(client, "submit") and hasattr(client, "gather")):
        raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
    if split not in ("bytes", "blocks"):
        raise _error(_ibdkit.ArgumentError, "InvalidArgument", f"split must be 'bytes' or 'blocks', got {split!r}")
    _whole("threads_per_task", threads_per_task, 0, MAX_THREADS)
    _whole("retries", retries, 0, 100)
    hints_path = hints.path if isinstance(hints, Hints) else _existing("hints", hints)
    h = hints if isinstance(hints, Hints) else Hints(hints_path)
    n = h.height
    src = os.path.expanduser(os.fspath(source))
    where = _existing("source", src) if split == "bytes" else None
    if mode == "coins" and os.path.exists(src) and not _blocks(src, network).is_datadir:
        raise _error(_ibdkit.ArgumentError, "InvalidArgument",
                     "mode='coins' reads the spent coins from a Bitcoin Core data directory's rev files: give a "
                     "datadir as the source, or mode='outpoints' for bare block files (it checks much less)")
    workers_threads = sum(client.nthreads().values()) if hasattr(client, "nthreads") else 1
    plan = _plan(ranges, n, split, where, network, workers_threads)

    start = time.perf_counter()
    salt_bytes = Salt.new().to_worker_bytes()
    tag = uuid.uuid4().hex[:12]
    av = None if assumevalid is None else str(assumevalid)
    futures = [client.submit(_range_task, src, hints_path, salt_bytes, a, b, threads_per_task, mode, network,
                             bool(collect_unspent), av, bool(skip_scripts), key=f"ibdkit-swiftsync-{a}-{b}-{tag}", pure=False, retries=retries)
               for a, b in plan]
    del salt_bytes
    results = client.gather(futures)
    partials = [p for p, _, _ in results]
    tip = next((h for p, _, h in results if p.last == n), None)
    net = network or (results[0][1] if results else "main")
    verdict = combine(partials, n, net, mode=mode)
    seconds = time.perf_counter() - start
    partials.sort(key=lambda p: p.first)
    return DaskRun(verdict=verdict, partials=partials, ranges=plan, seconds=seconds, tip=tip)
