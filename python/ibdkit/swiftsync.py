"""SwiftSync (BIPs 455-457): check ranges of blocks against a hintsfile, anywhere, and combine them.

    from ibdkit import swiftsync
    salt = swiftsync.Salt.new()
    hints = swiftsync.Hints("utxo.hints")
    parts = [swiftsync.check_range("~/.bitcoin", hints, salt, a, b, threads=2)
             for a, b in [(1, 400_000), (400_001, hints.height)]]
    verdict = swiftsync.combine(parts, hints.height, "main")
    stats = swiftsync.unspent_stats(parts)          # the UTXO set at n: hash_serialized_3, ...

    from distributed import Client                  # or across machines (docs/swiftsync.md)
    run = swiftsync.run_dask(Client("tcp://scheduler:8786"), "~/.bitcoin", "utxo.hints")

A range's result is a :class:`Partial`: both salted sums, counts, the value of its hinted-unspent
coins, the first refused block, and those coins as a sorted *unspent run* (docs/formats.md §12).
It pickles as its bytes, so Dask carries it between machines. The salt never does by accident: a
:class:`Salt` has no text form and refuses pickling; its bytes leave it only through
:meth:`Salt.to_worker_bytes`, whose result hides them from ``repr``/``str`` (and so from logs).

Two modes. ``mode="coins"`` (a Core datadir, which has rev files): BIP 457's full Coin in the sums
and, with the spent coins, every rule Core's ConnectBlock checks, scripts where Core's assumevalid
rule checks them — the trust of a classic replay. ``mode="outpoints"`` (any blocks) checks much
less than Bitcoin Core's assumevalid: read docs/swiftsync.md, *Trust*.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from . import _ibdkit
from . import MAX_HEIGHT, MAX_THREADS, PathLike, _error, _existing, _whole

__all__ = ["DaskRun", "Hints", "Partial", "Salt", "Verdict", "WorkerSaltBytes", "check_range", "combine",
           "run_dask", "unspent_coins", "unspent_stats", "unspent_to_arrow", "write_chainstate"]

_HIDDEN = "<ibdkit.swiftsync salt bytes (hidden)>"


def _check_mode(mode: Any) -> str:
    """The mode name, checked by the native module (the one place that knows which modes work)."""
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str, got {type(mode).__name__}")
    _ibdkit._swiftsync_mode(mode)
    return mode


class WorkerSaltBytes(bytes):
    """A salt's 32 bytes on their way to a worker (:meth:`Salt.to_worker_bytes`). They are plain
    bytes to whoever asks for them (``bytes(b)``, ``b.hex()``), but ``repr``, ``str`` and format
    strings show only a placeholder, so a scheduler's or worker's log of a task's arguments cannot
    print them."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _HIDDEN

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return _HIDDEN

    def __reduce__(self) -> Any:
        return (WorkerSaltBytes, (bytes(self),))


class Salt:
    """The secret of one SwiftSync run: 32 bytes from the kernel, the same for every range.

    Make one with :meth:`new`; give it to a worker as :meth:`to_worker_bytes` and rebuild it there
    with :meth:`from_worker_bytes`. It has no text form and is not pickled: a salt a miner learns
    lets them grind outputs whose hashes cancel (docs/swiftsync.md, *The salt*).
    """

    __slots__ = ("_native",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("make a Salt with Salt.new() or Salt.from_worker_bytes(b)")

    @classmethod
    def _wrap(cls, native: Any) -> "Salt":
        s = object.__new__(cls)
        object.__setattr__(s, "_native", native)
        return s

    @classmethod
    def new(cls) -> "Salt":
        """A fresh salt from the kernel's random source (getrandom)."""
        return cls._wrap(_ibdkit._Salt._random())

    @classmethod
    def from_worker_bytes(cls, data: Union[bytes, bytearray, memoryview]) -> "Salt":
        """The salt whose bytes :meth:`to_worker_bytes` gave (32 bytes; ArgumentError otherwise)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"worker bytes must be bytes, got {type(data).__name__}")
        return cls._wrap(_ibdkit._Salt._from_bytes(bytes(data)))

    def to_worker_bytes(self) -> WorkerSaltBytes:
        """The salt's bytes, for the channel a driver gives its work on. Keep them off logs,
        files and screens; their ``repr``/``str`` are a placeholder."""
        return WorkerSaltBytes(self._native._copy_for_worker())

    def __repr__(self) -> str:
        return "<ibdkit.swiftsync.Salt (hidden)>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("an ibdkit.swiftsync.Salt is not pickled: hand it to a worker with salt.to_worker_bytes() "
                        "and Salt.from_worker_bytes(b)")

    __reduce__ = __reduce_ex__


class Hints:
    """A BIP 456 hintsfile (``ibdkit hints``), checked when read: for every block 1..height the
    indices of its outputs still unspent at ``height``. Pickles as its path (read again there)."""

    def __init__(self, path: PathLike) -> None:
        self.path = _existing("path", path)
        self._native = _cached(_HINTS, (self.path,) + _stamp(self.path), lambda: _ibdkit._Hints(self.path))

    @property
    def height(self) -> int:
        """n: the height whose UTXO set the file describes."""
        return self._native.height

    @property
    def total(self) -> int:
        """Unspent outputs over all blocks."""
        return self._native.total

    def indices(self, height: int) -> List[int]:
        """Block ``height``'s unspent indices (counting only spendable outputs), increasing."""
        _whole("height", height, 1, self.height)
        return self._native.indices(height)

    def __repr__(self) -> str:
        return f"<ibdkit.swiftsync.Hints {self.path} height={self.height}>"

    def __reduce__(self) -> Any:
        return (Hints, (self.path,))


class Partial:
    """What one range contributes to the verdict (``check_range``): ``first``/``last`` (inclusive),
    ``agg_in``/``agg_out`` (32-byte salted sums), ``counts``, ``supply`` (satoshis of the
    hinted-unspent outputs), ``failure`` (None, or the first refused block: height, hash, reason)
    and its hinted-unspent coins as an unspent run (:meth:`unspent_run`). ``to_bytes`` holds all
    but the coins; pickling carries both."""

    __slots__ = ("_native",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a Partial comes from check_range() or Partial.from_bytes()")

    @classmethod
    def _wrap(cls, native: Any) -> "Partial":
        p = object.__new__(cls)
        object.__setattr__(p, "_native", native)
        return p

    @classmethod
    def from_bytes(cls, data: Union[bytes, bytearray, memoryview], unspent_run: Optional[bytes] = None) -> "Partial":
        """The partial ``to_bytes`` gave, optionally with its unspent run. Malformed bytes raise
        ``ibdkit.Error`` with the decoder's kind (EndOfData, TrailingData, BadMagic, InvalidValue, ...)."""
        for name, value in (("data", data), ("unspent_run", unspent_run)):
            if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
                raise TypeError(f"{name} must be bytes, got {type(value).__name__}")
        run = None if unspent_run is None else bytes(unspent_run)
        return cls._wrap(_ibdkit._Partial._from_parts(bytes(data), run))

    first = property(lambda self: self._native.first, doc="The range's first height.")
    last = property(lambda self: self._native.last, doc="The range's last height (inclusive).")
    agg_in = property(lambda self: self._native.agg_in, doc="Salted sum of the inputs' outpoints (32 bytes).")
    agg_out = property(lambda self: self._native.agg_out, doc="Salted sum of the outputs not hinted unspent.")
    counts = property(lambda self: self._native.counts, doc="blocks, transactions, inputs, outputs, unspent, unspendable.")
    supply = property(lambda self: self._native.supply, doc="Satoshis of the hinted-unspent outputs.")
    failure = property(lambda self: self._native.failure, doc="None, or {height, hash, reason} of the refused block.")
    mode = property(lambda self: self._native.mode, doc="'coins' or 'outpoints': how the range was checked.")
    script_checked_inputs = property(lambda self: self._native.script_checked_inputs,
                                     doc="Coins mode: the inputs whose scripts were verified.")

    def to_bytes(self) -> bytes:
        """The partial without its coins (docs/formats.md §12)."""
        return self._native._to_bytes()

    def unspent_run(self) -> Optional[bytes]:
        """The hinted-unspent coins as an unspent run (chainstate key order; docs/formats.md §12),
        or None when they were not collected."""
        return self._native._run()

    def __reduce__(self) -> Any:
        return (Partial.from_bytes, (self.to_bytes(), self.unspent_run()))

    def __repr__(self) -> str:
        c = self.counts
        tail = f" REFUSED at {self.failure['height']}" if self.failure else ""
        return (f"<ibdkit.swiftsync.Partial {self.first}..{self.last} {self.mode} blocks={c['blocks']} "
                f"unspent={c['unspent']}{tail}>")


@dataclass(frozen=True)
class Verdict:
    """The verdict over ranges covering 1..height (``combine``). ``ok`` only when the ranges cover
    1..height exactly once, no block was refused, the sums are equal and the unspent value is within
    the subsidies; ``reason`` says why not. Outpoints mode: much less than assumevalid; coins mode:
    Core's rules, scripts on ``script_checked_inputs`` inputs."""

    ok: bool
    reason: Optional[str]
    height: int
    network: str
    mode: str
    ranges: int
    counts: Dict[str, int]
    supply_sat: int
    supply_bound_sat: int
    script_checked_inputs: int = 0


# ---- per-process caches: a worker reads the block index and the hintsfile once per run ---------

_BLOCKS: "OrderedDict[Any, Any]" = OrderedDict()
_HINTS: "OrderedDict[Any, Any]" = OrderedDict()


def _cached(cache: "OrderedDict[Any, Any]", key: Any, make: Any, keep: int = 2) -> Any:
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = make()
    cache[key] = value
    while len(cache) > keep:
        cache.popitem(last=False)
    return value


def _stamp(path: str) -> Tuple[Any, ...]:
    """What changes when a file, or a directory of block files and its index, changes."""
    if not os.path.isdir(path):
        st = os.stat(path)
        return ((st.st_size, st.st_mtime_ns),)
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d in ("blocks", "index") + _ibdkit.NETWORK_SUBFOLDERS]
        for f in files:
            if f.endswith((".dat", ".ldb", ".log")) or f in ("CURRENT",) or f.startswith("MANIFEST"):
                st = os.stat(os.path.join(root, f))
                out.append((root, f, st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


def _blocks(where: str, network: Optional[str]) -> Any:
    return _cached(_BLOCKS, (where, network) + _stamp(where), lambda: _ibdkit._SwiftSyncBlocks(where, network))


def _hints(hints: Union[Hints, PathLike]) -> Hints:
    if isinstance(hints, Hints):
        return hints
    if isinstance(hints, (str, os.PathLike)):
        return Hints(hints)
    raise TypeError(f"hints must be an ibdkit.swiftsync.Hints or a path, got {type(hints).__name__}")


# ---- the range check and the verdict --------------------------------------------------------------

def _check(source: PathLike, hints: Union[Hints, PathLike], salt: Salt, first: int, last: int, threads: int,
           mode: str, network: Optional[str], collect_unspent: bool, assumevalid: Optional[Union[str, int]] = None,
           skip_scripts: bool = False) -> Tuple[Partial, str, str]:
    _check_mode(mode)
    if not isinstance(salt, Salt):
        raise TypeError(f"salt must be an ibdkit.swiftsync.Salt (Salt.new(), Salt.from_worker_bytes(b)), "
                        f"got {type(salt).__name__}")
    where = _existing("source", source)
    h = _hints(hints)
    _whole("first", first, 1, MAX_HEIGHT)
    _whole("last", last, 1, MAX_HEIGHT)
    _whole("threads", threads, 0, MAX_THREADS)
    if not first <= last <= h.height:
        raise _error(_ibdkit.ArgumentError, "InvalidArgument",
                     f"first..last must be within the hintsfile's 1..{h.height}, got {first}..{last}")
    blocks = _blocks(where, network)
    if blocks.tip_height < last:
        raise _error(_ibdkit.ArgumentError, "InvalidArgument",
                     f"source: the blocks end at height {blocks.tip_height}, before last={last}")
    native = _ibdkit._check_range(blocks, h._native, salt._native, first, last, threads, bool(collect_unspent), mode,
                                  None if assumevalid is None else str(assumevalid), bool(skip_scripts))
    return Partial._wrap(native), blocks.network, blocks.hash_at(last)


def check_range(source: PathLike, hints: Union[Hints, PathLike], salt: Salt, first: int, last: int, *,
                threads: int = 1, mode: str = "outpoints", network: Optional[str] = None,
                collect_unspent: bool = True, assumevalid: Optional[Union[str, int]] = None,
                skip_scripts: bool = False) -> Partial:
    """Checks blocks ``first``..``last`` (inclusive; 1 <= first <= last <= hints.height) of
    ``source`` (a Core datadir or a blocks directory, as ``read_blocks`` takes them) against
    ``hints`` with ``salt``, on ``threads`` threads, without the GIL.

    ``mode``: "outpoints" (C++ ``CheckRange``, BIP 457's assume-valid extension, any blocks) or
    "coins" (C++ ``CheckRangeCoins``: the source must be a Core datadir; the spent coins come from
    its rev files and every rule of Core's ConnectBlock is checked; scripts where Core's
    assumevalid rule checks them — ``assumevalid`` as in :func:`ibdkit.replay`, None the
    network's, 0 every script; ``skip_scripts=True`` trusts every script, a benchmark only).

    Returns a :class:`Partial`. A refused block is not an exception (``partial.failure``); a
    missing path is ``NotFoundError``, arguments out of range ``ArgumentError``, blocks or rev data
    missing or not decoding ``ibdkit.Error``. ``collect_unspent=False`` keeps no coins (a verdict
    only).
    """
    return _check(source, hints, salt, first, last, threads, mode, network, collect_unspent, assumevalid,
                  skip_scripts)[0]


def combine(partials: Iterable[Partial], height: int, network: str, *, mode: str = "outpoints") -> Verdict:
    """The verdict over ``partials`` for the hintsfile's ``height`` on ``network`` (C++ ``Combine``).
    Every partial must have been checked in ``mode`` (ArgumentError otherwise)."""
    _check_mode(mode)
    parts = list(partials)
    for p in parts:
        if not isinstance(p, Partial):
            raise TypeError(f"partials must be ibdkit.swiftsync.Partial objects, got {type(p).__name__}")
        if p.mode != mode:
            raise _error(_ibdkit.ArgumentError, "InvalidArgument",
                         f"combine(mode={mode!r}): the partial {p.first}..{p.last} was checked in mode {p.mode!r}")
    _whole("height", height, 0, MAX_HEIGHT)
    return Verdict(**_ibdkit._combine([p._native for p in parts], height, network, mode))


def write_chainstate(partials: Iterable[Partial], path: PathLike, verdict: Verdict, *, tip: Optional[str] = None,
                     source: Optional[PathLike] = None) -> int:
    """Writes the UTXO set at ``verdict.height`` — the partials' hinted-unspent coins — as a new
    chainstate at ``path`` in Bitcoin Core's format, as ``replay --swiftsync`` writes one (C++
    ``WriteUnspentRuns``): the unspent runs merged in key order into one bulk load, with block n as
    the best block. ``tip``: that block's hash (hex), or ``source``: blocks to read it from (exactly
    one). ``DaskRun.write_chainstate`` does this for a Dask run.

    Only an accepted verdict over exactly these partials, each with its coins, is written
    (``ArgumentError`` otherwise). ``path`` must be new or empty and outside any Bitcoin Core data
    directory (``RefusedError``). A failure leaves nothing behind. Returns the coins written.
    """
    parts = sorted(partials, key=lambda p: p.first)
    if not isinstance(verdict, Verdict):
        raise TypeError(f"verdict must be an ibdkit.swiftsync.Verdict (combine()), got {type(verdict).__name__}")

    def refuse(why: str) -> Any:
        return _error(_ibdkit.ArgumentError, "InvalidArgument", f"write_chainstate: {why}")

    if not verdict.ok:
        raise refuse(f"the verdict refused the history ({verdict.reason}); nothing is written")
    if len(parts) != verdict.ranges or [(p.first, p.last) for p in parts] != _cover(parts, verdict.height):
        raise refuse(f"the partials are not the {verdict.ranges} ranges covering 1..{verdict.height} that the verdict accepted")
    runs = [p.unspent_run() for p in parts]
    if any(r is None for r in runs):
        raise refuse("a partial holds no coins (checked with collect_unspent=False)")
    if sum(p.counts["unspent"] for p in parts) != verdict.counts["unspent"]:
        raise refuse("the partials' coins are not the verdict's")
    if (tip is None) == (source is None):
        raise refuse("give tip (the hash of block n) or source (blocks to read it from), exactly one")
    if tip is None:
        tip = _blocks(_existing("source", source), verdict.network).hash_at(verdict.height)
    return _ibdkit._write_chainstate(runs, os.fspath(path), verdict.network, tip)


def _cover(parts: List[Partial], height: int) -> List[Tuple[int, int]]:
    """The ranges as they must be to cover 1..height once each, given their firsts."""
    ends = [p.first - 1 for p in parts[1:]] + [height]
    return [(p.first, e) for p, e in zip(parts, ends)] if parts and parts[0].first == 1 else []


# ---- the unspent coins: statistics, Coin objects, Arrow ------------------------------------------

def _runs(items: Iterable[Union[Partial, bytes]]) -> List[bytes]:
    runs = []
    for item in items:
        if isinstance(item, Partial):
            run = item.unspent_run()
            if run is None:
                raise _error(_ibdkit.ArgumentError, "InvalidArgument",
                             f"partial {item.first}..{item.last} holds no coins: check_range(..., collect_unspent=True)")
            runs.append(run)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            runs.append(bytes(item))
        else:
            raise TypeError(f"expected Partial objects or unspent runs (bytes), got {type(item).__name__}")
    return runs


def unspent_stats(partials: Iterable[Union[Partial, bytes]], hash_type: str = "hash_serialized_3", *,
                  height: Optional[int] = None) -> Dict[str, Any]:
    """UTXO set statistics of the ranges' unspent coins together (their runs merged in key order),
    the same fields as ``Chainstate.stats()``: equal to those of the chainstate a classic replay
    to n builds when the verdict is ok. An outpoint in two runs raises ``ibdkit.Error``."""
    _whole("height", height, 0, MAX_HEIGHT, optional=True)
    return _ibdkit._unspent_stats(_runs(partials), hash_type, height)


def unspent_coins(partials: Iterable[Union[Partial, bytes]], network: str = "main") -> Iterator[Any]:
    """The ranges' unspent coins as :class:`ibdkit.Coin` objects, in chainstate key order."""
    return _ibdkit._unspent_coins(_runs(partials), network)


def unspent_to_arrow(partials: Iterable[Union[Partial, bytes]], network: str = "main", batch_size: int = 65536, *,
                     script_hex: bool = False) -> Iterator[Any]:
    """The ranges' unspent coins as ``pyarrow.RecordBatch`` es, the columns of ``Chainstate.to_arrow``."""
    from ._arrow import batches
    return batches(_ibdkit._unspent_batches(_runs(partials), network, batch_size, script_hex), script_hex)


def __getattr__(name: str) -> Any:
    """The Dask driver (``run_dask``, ``DaskRun``), from its own module on first use (PEP 562)."""
    if name in ("run_dask", "DaskRun"):
        from . import _swiftsync_dask
        return getattr(_swiftsync_dask, name)
    raise AttributeError(f"module 'ibdkit.swiftsync' has no attribute '{name}'")
