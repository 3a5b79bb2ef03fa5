"""ibdkit: Bitcoin Core's IBD data path (block files, blocks, chainstate) from Python.

A thin layer over the C++ library. Blocks and transactions are lazy views over the block's bytes;
replay and sync run the C++ pipeline without the GIL; a chainstate (Core's LevelDB format) is
read-only and exports to Arrow without a Python object per coin.

    import ibdkit
    for block in ibdkit.read_blocks("~/.bitcoin/blocks"):
        for tx in block:
            print(tx.txid, tx.vsize)

    stats = ibdkit.replay("chain/blocks", chainstate="cs", dbcache=450, policy="hardened")
    cs = ibdkit.Chainstate("cs")
    table = pyarrow.Table.from_batches(cs.to_arrow())

Failures raise ``ibdkit.Error`` with ``kind`` (the typed error: "EndOfData", "Corrupt", ...)
and ``message``; three causes have their own subclasses, which are also Python's own kinds:
``NotFoundError`` (a ``FileNotFoundError``), ``RefusedError`` (a ``PermissionError``: a path ibdkit
will not write, such as anything inside a Bitcoin Core data directory) and ``ArgumentError`` (a
``ValueError``). Arguments are checked before any work starts.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Union

from ._ibdkit import (  # noqa: F401  (re-exported)
    Block,
    BlockReader,
    ArgumentError,
    Coin,
    Error,
    Input,
    InputVerdict,
    NotFoundError,
    Output,
    RefusedError,
    Transaction,
    __version__,
    block_script_flags,
    format_script_flags,
    parse_script_flags,
    policies,
)
from . import _ibdkit

__all__ = [
    "ArgumentError", "Block", "BlockReader", "SpentBlockReader", "Chainstate", "Coin", "Error", "Input", "InputVerdict",
    "NotFoundError", "Output", "RefusedError", "Transaction",
    "block_script_flags", "decode_block", "format_script_flags", "parse_script_flags", "policies",
    "read_blocks", "table_schema", "to_arrow", "replay", "sync", "verify_input", "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]
Progress = Union[None, bool, Callable[[Dict[str, Any]], None]]

MAX_DBCACHE_MIB = _ibdkit.MAX_DBCACHE_MIB
MAX_HEIGHT = 100_000_000
MAX_THREADS = 1024


def _error(cls: Any, kind: str, message: str) -> Exception:
    e = cls(message)
    e.kind = kind
    e.message = message
    return e


def _whole(name: str, value: Any, lo: int, hi: int, optional: bool = False) -> Any:
    """``value`` if it is an int in [lo, hi] (None too when ``optional``); else TypeError/ArgumentError."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise _error(_ibdkit.ArgumentError, "InvalidArgument", f"{name} must be in {lo}..{hi}, got {value}")
    return value


def _existing(name: str, path: PathLike) -> str:
    """``path`` expanded; NotFoundError naming the argument when nothing is there."""
    where = os.path.expanduser(os.fspath(path))
    if not os.path.exists(where):
        raise _error(_ibdkit.NotFoundError, "NotFound", f"{name}: {where} does not exist")
    return where


def decode_block(data: Union[bytes, bytearray, memoryview], network: str = "main") -> Block:
    """Decodes one serialized block (80-byte header, transactions with witness).

    The bytes are copied once into the block, which its transaction views share. Malformed bytes
    raise ``ibdkit.Error`` (kind "EndOfData", "TrailingData", "NonCanonicalCompactSize", ...).
    ``network`` is the default of ``Block.check()`` and of output addresses.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    return _ibdkit.decode_block(data, network)


def verify_input(tx: Union[bytes, bytearray, memoryview, Transaction], index: int, spent_outputs: Any,
                 flags: Union[str, int, None] = None, network: str = "main", height: Optional[int] = None,
                 block_hash: Optional[str] = None) -> InputVerdict:
    """Verifies input ``index`` of ``tx`` as Core's CScriptCheck does: its scriptSig and witness against
    the output it spends, under a block's script flags.

    ``tx`` is a serialized transaction (with witness) or an ``ibdkit.Transaction``. ``spent_outputs``
    holds one spent output per input of ``tx``, in input order (BIP341 signs all of them): each a
    ``(value, script_pubkey)`` pair, an object with ``.value`` and ``.script_pubkey`` (``Output``,
    ``Coin``) or a dict ``{"value", "script_pubkey"}`` (optionally under ``"txout"``; the script as
    bytes or hex). ``flags`` is Core's names (``"P2SH,WITNESS"``) or the int of its SCRIPT_VERIFY_*
    bits; without it, the flags Core connects the block at ``height`` (and ``block_hash``, for the
    networks' exception blocks) of ``network`` with, and without a height every consensus flag of a
    modern block (P2SH, DERSIG, NULLDUMMY, CHECKLOCKTIMEVERIFY, CHECKSEQUENCEVERIFY, WITNESS, TAPROOT).

    Returns an ``InputVerdict``: ``ok``, ``error`` (Core's ScriptErrorString), ``error_name``
    (``"EVAL_FALSE"``, ...), ``reason`` (the block's reject reason, None when ok) and ``flags``.
    A malformed transaction or unusable arguments raise ``ibdkit.Error``.
    """
    return _ibdkit._verify_input(tx, index, spent_outputs, flags, network, height, block_hash)


def read_blocks(path: PathLike, network: Optional[str] = None, spent_outputs: bool = False,
                from_height: Optional[int] = None, to_height: Optional[int] = None) -> Iterator[Block]:
    """Blocks of a blocks directory (blkNNNNN.dat, xor.dat honoured) or a Core datadir, in chain order.

    The files are scanned once and ordered by following prev-hashes from the genesis block (the
    most-work chain wins; orphans, stale blocks and duplicates are skipped and counted in
    ``reader.scan``). Each block is read when iterated; its transactions are views into it.
    ``network`` defaults to the one whose magic starts the first file. ``len(reader)`` is the
    number of blocks left to read. Each block is checked as a replay checks it before connecting
    it: its record is the block the index (or the scan) names, and it passes Core's CheckBlock
    (merkle root, proof of work, sizes); a damaged one raises ``ibdkit.Error`` (kind ``"Corrupt"``).

    With ``spent_outputs=True`` each block carries the coins its inputs spend (docs/spent-outputs.md):
    ``Input.value``, ``script_pubkey``, ``script_type``, ``address``, ``height``, ``coinbase``,
    ``Transaction.fee`` and ``feerate``, ``Block.fees`` and ``subsidy``. From a Core datadir they come
    from its rev files; from blk files the blocks are replayed into a temporary chainstate to compute
    them. Without them those attributes raise ``ibdkit.Error`` (kind ``"NoSpentOutputs"``).
    ``from_height``/``to_height`` bound the heights read (inclusive): the reader seeks to the first
    through the chain's positions, reading no block below it.
    """
    where = _existing("path", path)
    _whole("from_height", from_height, 0, MAX_HEIGHT, optional=True)
    _whole("to_height", to_height, 0, MAX_HEIGHT, optional=True)
    if spent_outputs:
        return SpentBlockReader(where, network, from_height, to_height)
    return BlockReader(where, network, from_height, to_height)


BLOCK_TABLES = ("blocks", "transactions", "inputs", "outputs")


class SpentBlockReader(_ibdkit.SpentBlockReader):
    """Blocks with their spent outputs in height order (``read_blocks(..., spent_outputs=True)``)."""

    def to_arrow(self, table: str, batch_size: int = 65536) -> Iterator[Any]:
        """Yields ``pyarrow.RecordBatch`` es of one table ("blocks", "transactions", "inputs" or
        "outputs") over the blocks not read yet: the rows ``ibdkit export`` writes, built in C++
        (columns: docs/spent-outputs.md). A batch holds the rows of whole blocks, about
        ``batch_size`` of them."""
        return to_arrow(table, self, batch_size)


def table_schema(table: str) -> Any:
    """The pyarrow schema of a block table's batches."""
    from ._arrow import table_schema as schema
    return schema(_ibdkit._table_columns(table))


def to_arrow(table: str, blocks: Any, batch_size: int = 65536) -> Iterator[Any]:
    """Yields ``pyarrow.RecordBatch`` es of one block table over ``blocks``: a reader from
    ``read_blocks(..., spent_outputs=True)`` or any iterable of blocks carrying their spent
    outputs (``Block.with_spent_outputs``). Feed them to ``pyarrow.Table.from_batches``,
    ``pyarrow.parquet`` or DuckDB."""
    from ._arrow import table_batches
    cursor = _ibdkit._TableBatches(blocks, table, batch_size)
    return table_batches(iter(cursor.next, None), _ibdkit._table_columns(table))


class _Bar:
    """Progress bar over a callback: tqdm when installed and wanted (None: when stderr is a terminal;
    True: always), else nothing."""

    def __init__(self, progress: Progress, desc: str, unit: str = "block") -> None:
        self.user = progress if callable(progress) else None
        self.bar = None
        wanted = progress is True or (progress is None and sys.stderr is not None and sys.stderr.isatty())
        if wanted:
            try:
                from tqdm.auto import tqdm  # type: ignore
                self.bar = tqdm(desc=desc, unit=unit, total=0, dynamic_ncols=True)
            except ImportError:
                pass
        self.active = self.bar is not None or self.user is not None

    def __call__(self, p: Dict[str, Any]) -> None:
        if self.user is not None:
            self.user(p)
        if self.bar is not None:
            total = p.get("tip_height") or 0
            if total and self.bar.total != total:
                self.bar.total = total
            if "flushing" in p:
                self.bar.set_postfix_str("writing the chainstate" if p["flushing"] else "", refresh=False)
            if p.get("phase") == "write":  # SwiftSync's accepted coins into the new chainstate
                self.bar.set_postfix_str(f"writing the chainstate: {p['coins_written']:,}/{p['coins_to_write']:,} coins",
                                         refresh=False)
            if "height" in p:
                self.bar.n = max(p["height"], 0)
            elif "fraction" in p:
                self.bar.total = 1000
                self.bar.n = int(p["fraction"] * 1000)
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _settings(dbcache: int, policy: str, threads: int, assumevalid: Optional[Union[str, int]], skip_scripts: bool,
              minimum_chain_work: Optional[str]) -> Any:
    """The settings every run shares, checked by the library (C++ ``CheckRunSettings``): the CLI's
    words for the same mistake."""
    if minimum_chain_work is not None and not isinstance(minimum_chain_work, str):
        raise TypeError(f"minimum_chain_work must be a hex string, got {type(minimum_chain_work).__name__}")
    return _ibdkit._run_settings(dbcache, policy, threads, None if assumevalid is None else str(assumevalid), skip_scripts,
                                 minimum_chain_work)


def replay(blocks: PathLike, *, network: Optional[str] = None, chainstate: Optional[PathLike] = None,
           dbcache: int = 450, policy: str = "hardened", stop_height: Optional[int] = None,
           via_p2p: bool = False, threads: int = 0, statistics: bool = True,
           assumevalid: Optional[Union[str, int]] = None, progress: Progress = None,
           skip_scripts: bool = False, swiftsync: Optional[PathLike] = None, swiftsync_mode: str = "coins",
           fallback: bool = False, minimum_chain_work: Optional[str] = None) -> Dict[str, Any]:
    """Replays block files into a chainstate, as ``ibdkit replay`` (C++ ``Replay``).

    blocks: a blocks directory, a blk file or a Core datadir. network: default from the files'
    magic. chainstate: directory to build or resume (default: a temporary one, removed after).
    dbcache: UTXO cache budget in MiB (0: the least, a flush after every block). policy: a buffer policy name
    (``ibdkit.policies()``). stop_height: stop and flush after this height. via_p2p: frame every
    block as a P2P message first. threads: as ``--threads`` (0: every core the process may run on; 1: all on one thread).
    statistics: False skips the final walk over the UTXO set (``--no-stats``): the dict then has
    height and bestblock but no txouts/hash_serialized_3. assumevalid: as ``--assumevalid`` (None:
    the network's default, none on regtest; 0 or "0": verify every script; a block hash: skip the
    scripts below it where Core would). progress: None for a tqdm bar (when installed) when stderr is
    a terminal, True for one anyway, a callable receiving a dict about 4 times a second, or False.
    chainstate must be new, empty or one ibdkit made, and outside any Bitcoin Core data directory
    (else ``RefusedError``).

    Returns the statistics as a dict (the CLI's ``--json`` fields: height, bestblock, txouts,
    hash_serialized_3, total_amount, blocks_connected, seconds, flushes, reject_reason,
    script_checked_inputs, script_checks_from_height, ...).
    A block failing its checks is not an exception: ``reject_reason``/``reject_height`` say which.
    Ctrl-C stops cleanly (the chainstate is flushed) and then raises KeyboardInterrupt.
    skip_scripts: trust every script, as ``--skip-scripts`` (a benchmark; not with assumevalid).
    minimum_chain_work: as ``--minimum-chain-work``, Core's -minimumchainwork in hex (None: the
    network's); below it the assumevalid rule skips no script.

    swiftsync: a hintsfile (BIP 456), as ``replay --swiftsync``: blocks 1..n checked with SwiftSync
    into a new chainstate (C++ ``run::RunSwiftSync``; docs/swiftsync.md). swiftsync_mode: "coins"
    (every rule Core checks, spent coins from a datadir's rev files) or "outpoints" (any blocks,
    checks much less). fallback: on a refused history, replay 1..n the classic way to name the
    first invalid block. Returns the fields of ``replay --swiftsync --json`` (``swiftsync`` holds
    the verdict; a refused history is not an exception: ``swiftsync["ok"]`` is False).
    """
    where = _existing("blocks", blocks)
    _whole("dbcache", dbcache, 0, MAX_DBCACHE_MIB)
    _whole("stop_height", stop_height, 0, MAX_HEIGHT, optional=True)
    _whole("threads", threads, 0, MAX_THREADS)
    settings = _settings(dbcache, policy, threads, assumevalid, skip_scripts, minimum_chain_work)
    if swiftsync is not None:
        if stop_height is not None or via_p2p:
            raise _error(_ibdkit.ArgumentError, "InvalidArgument",
                         "swiftsync checks blocks 1..n of its hintsfile: drop stop_height and via_p2p")
        bar = _Bar(progress, "swiftsync")
        try:
            return _ibdkit._replay_swiftsync(where, os.fspath(_existing("swiftsync", swiftsync)), network,
                                             None if chainstate is None else os.fspath(chainstate), settings,
                                             statistics, swiftsync_mode, fallback, bar if bar.active else None)
        finally:
            bar.close()
    if fallback:
        raise _error(_ibdkit.ArgumentError, "InvalidArgument", "fallback goes with swiftsync")
    bar = _Bar(progress, "replay")
    try:
        return _ibdkit._replay(where, network, None if chainstate is None else os.fspath(chainstate), settings,
                               stop_height, via_p2p, statistics, bar if bar.active else None)
    finally:
        bar.close()


def sync(connect: Union[str, Sequence[str]], *, network: Optional[str] = None, chainstate: Optional[PathLike] = None,
         dbcache: int = 450, policy: str = "hardened", timeout: float = 30.0, headers_wait: float = 3.0,
         window: int = 16, stop_height: Optional[int] = None, getblocks: bool = False,
         threads: int = 0, statistics: bool = True, assumevalid: Optional[Union[str, int]] = None,
         datadir: Optional[PathLike] = None, swiftsync: Optional[PathLike] = None, keep_recent: int = 0,
         swiftsync_mode: str = "coins", progress: Progress = None,
         minimum_chain_work: Optional[str] = None, skip_scripts: bool = False) -> Dict[str, Any]:
    """Downloads and connects blocks from P2P peers, as ``ibdkit sync`` (C++ ``Sync``; from several,
    ``run::SyncFromPeers``).

    connect: "HOST:PORT" ("[v6]:PORT"; the network's default port if omitted), or a list of them:
    the blocks come from every peer in parallel and the dict adds ``peers`` (each with any
    ``dropped``), ``unreachable`` and ``notes``, as the CLI's ``--json`` (getblocks takes one). Other options as
    in :func:`replay` and the CLI (timeout and headers_wait in seconds, window = blocks in flight,
    getblocks = use getblocks/inv instead of headers-first). network: by default the one ibdkit
    recorded in ``chainstate`` (a sync resumed), else in ``datadir`` (one an earlier sync wrote),
    else regtest, as the CLI's (C++ ``SyncNetwork``). Returns the statistics as a dict
    (with ``mode``, ``peer``). A peer that fails us (unreachable, stalled, misbehaving, gone) raises
    :class:`Error` with ``kind`` Connect, Timeout, Closed, Io, Misbehaving or WrongNetwork, once the blocks
    connected so far are flushed (as ``ibdkit sync`` exits 1); a block failing its checks is not an
    exception, as in :func:`replay`.

    datadir: as ``ibdkit sync --datadir``, a Bitcoin Core data directory written as the blocks
    connect (blocks, undo data, block index; the chainstate in its network's folder unless
    ``chainstate`` names one), which ``bitcoind -datadir=DATADIR`` starts on (docs/sync.md).

    swiftsync: a hintsfile for height n, as ``ibdkit sync --swiftsync``: blocks 1..n and their
    spent coins (BIP 455) from every peer of ``connect`` (a list) that serves them, checked with
    SwiftSync in coins mode, then the classic sync to the peers' tip; the dict is the CLI's
    ``--json`` (``swiftsync`` the verdict at ``swiftsync_height``, ``peers`` with any ``dropped``).
    A history refused (a rule, or spent coins no peer made balance) is not an exception: its
    ``swiftsync["ok"]`` is False and nothing was written (docs/swiftsync.md, *Over P2P*).
    keep_recent: as ``--keep-recent``, BIP 455's cutoff (the outputs of the last N blocks kept).
    swiftsync_mode: as ``--swiftsync-mode``: "coins" (the spent coins from peers serving BIP 455,
    every rule) or "outpoints" (blocks alone from any peer, stock Core too; checks much less: no
    amounts, maturity, BIP68, sigops or scripts; no datadir or keep_recent).
    minimum_chain_work: as ``--minimum-chain-work``, Core's -minimumchainwork in hex (None: the
    network's): a peers' header chain with less work is not synced, whatever the number of peers
    (:class:`Error` with kind NotFound, or Misbehaving from one peer).
    skip_scripts: trust every script, as ``--skip-scripts`` (a benchmark of the data path; not with
    assumevalid).
    """
    _whole("dbcache", dbcache, 0, MAX_DBCACHE_MIB)
    _whole("stop_height", stop_height, 0, MAX_HEIGHT, optional=True)
    _whole("threads", threads, 0, MAX_THREADS)
    _whole("window", window, 1, 1024)
    _whole("keep_recent", keep_recent, 0, 100000)
    settings = _settings(dbcache, policy, threads, assumevalid, skip_scripts, minimum_chain_work)
    peers = [connect] if isinstance(connect, str) else list(connect)
    if swiftsync is not None:
        if stop_height is not None or getblocks:
            raise _error(_ibdkit.ArgumentError, "InvalidArgument",
                         "swiftsync syncs blocks 1..n of its hintsfile, then to the peers' tip: drop stop_height "
                         "and getblocks")
        bar = _Bar(progress, "swiftsync")
        try:
            return _ibdkit._sync_swiftsync(peers, os.fspath(_existing("swiftsync", swiftsync)), network,
                                           None if chainstate is None else os.fspath(chainstate), settings,
                                           float(timeout), window, keep_recent, statistics,
                                           None if datadir is None else os.fspath(datadir), swiftsync_mode,
                                           bar if bar.active else None)
        finally:
            bar.close()
    if len(peers) > 1 and getblocks:
        raise _error(_ibdkit.ArgumentError, "InvalidArgument", "getblocks takes one peer: give one connect")
    bar = _Bar(progress, "sync")
    try:
        return _ibdkit._sync(peers, network, None if chainstate is None else os.fspath(chainstate), settings,
                             float(timeout), float(headers_wait), window, stop_height, getblocks, statistics,
                             None if datadir is None else os.fspath(datadir), bar if bar.active else None)
    finally:
        bar.close()


class Chainstate(_ibdkit._Chainstate):
    """A chainstate in Bitcoin Core's LevelDB format (DATADIR/chainstate or a datadir), read-only.

    policy: the buffer policy of the database's key/value streams. dbcache: LevelDB cache in MiB.
    network: the network used to encode addresses (main, test, testnet4, signet, regtest); by
    default the one ibdkit recorded in its chainstate, else the data directory's layout, else main.
    A data directory is accepted: its (network's) chainstate is read. Nothing is ever written.

    Iterating yields :class:`Coin` objects in database (txid) order; ``get(txid, vout)`` looks one
    up; ``stats()`` is ``gettxoutsetinfo``; ``to_arrow()`` yields ``pyarrow.RecordBatch`` es.
    """

    def __init__(self, path: PathLike, *, policy: str = "hardened", dbcache: int = 64,
                 network: Optional[str] = None) -> None:
        _whole("dbcache", dbcache, 1, MAX_DBCACHE_MIB)
        super().__init__(_existing("path", path), policy, dbcache, network or "")

    def __enter__(self) -> "Chainstate":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def stats(self, hash_type: str = "hash_serialized_3", *, height: Optional[int] = None,
              progress: Progress = False) -> Dict[str, Any]:
        """UTXO set statistics like Core's ``gettxoutsetinfo``.

        hash_type: "hash_serialized_3" (Core's hash) or "none" (counts only, faster). height: the
        height to report (default: the highest coin height). Returns a dict with height,
        bestblock, txouts, transactions, bogosize, total_amount (BTC string), total_amount_sat
        and hash_serialized_3.
        """
        bar = _Bar(progress, "stats", unit="")
        try:
            return self._stats(hash_type, height, bar if bar.active else None)
        finally:
            bar.close()

    def balances(self, out: Optional[PathLike] = None, *, top: Optional[int] = None,
                 format: Optional[str] = None, memory: int = 64, tmpdir: Optional[PathLike] = None,
                 progress: Progress = False) -> Any:
        """Balance of every distinct output script, largest value first (``ibdkit utxo balances``).

        Rows: script_pubkey (hex), address (None where the script has none), script_type (Core's
        TxoutType name), coins, value (satoshis); equal values are ordered by script bytes. top
        keeps the N largest. Memory stays within ``memory`` MiB per sort whatever the set's size:
        what does not fit goes to run files in ``tmpdir`` (default: the directory of ``out``, else
        the system's temporary directory), removed as soon as they are opened.

        Without ``out`` the rows come back as a list of dicts (keep ``top`` small on mainnet's
        ~60 M scripts); with ``out`` they are written as csv, jsonl or sqlite (``format``, default
        from the file's suffix: .csv, .jsonl/.json, .sqlite/.db) and a summary comes back: rows,
        scripts, coins, value, txouts, total_amount_sat, runs. Either way Σ coins must equal the
        set's txouts and Σ value its total_amount (else :class:`Error`, kind "Corrupt").
        """
        path = None if out is None else os.path.expanduser(os.fspath(out))
        fmt = format or ""
        if path is not None and not fmt:
            suffix = os.path.splitext(path)[1].lower()
            fmt = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".sqlite": "sqlite", ".db": "sqlite"}.get(
                suffix, suffix.lstrip("."))
        tmp = None if tmpdir is None else os.path.expanduser(os.fspath(tmpdir))
        _whole("top", top, 0, 10**12, optional=True)
        _whole("memory", memory, 1, MAX_DBCACHE_MIB)
        bar = _Bar(progress, "balances", unit="")
        try:
            return self._balances(path, fmt, top, memory, tmp, bar if bar.active else None)
        finally:
            bar.close()

    def to_arrow(self, batch_size: int = 65536, *, script_hex: bool = False) -> Iterator[Any]:
        """Yields ``pyarrow.RecordBatch`` es of every coin (columns as ``ibdkit utxo dump``).

        Columns: txid (string, hex), vout (uint32), height (uint32), coinbase (bool), value
        (int64, satoshis), script_type (string), address (string, null when the script has
        none), script_pubkey (binary, or hex string with script_hex=True). The buffers are built in C++;
        Python sees one object per column per batch. Feed them to
        ``pyarrow.Table.from_batches``, ``pyarrow.parquet`` or DuckDB.
        """
        from ._arrow import batches
        return batches(self._batches(batch_size, script_hex), script_hex)

    def schema(self, *, script_hex: bool = False) -> Any:
        """The pyarrow schema of :meth:`to_arrow`'s batches."""
        from ._arrow import schema
        return schema(script_hex)
