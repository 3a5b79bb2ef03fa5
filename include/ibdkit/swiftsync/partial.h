// ibdkit/swiftsync/partial.h — a range's Partial (check_range.h) as bytes, and its unspent coins as
// a sorted run: how the result of a range travels from the machine that checked it to the one that
// combines the ranges (docs/swiftsync.md, *Across machines*; byte layouts in docs/formats.md §12).
//
// Partial bytes: magic `73 73 70 74` ("sspt") | version: 0x01 for an outpoints-mode partial, 0x02
// for a coins-mode one | first LE32 | last LE32 | agg_in (32) | agg_out (32) | counts: blocks,
// transactions, inputs, outputs, unspent, unspendable (LE64 each) | supply LE64 | 0x00, or 0x01 |
// failure height LE32 | block hash (32) | CompactSize reason length (at most MAX_FAILURE_REASON) |
// reason (printable ASCII); version 0x02 then adds script-checked inputs LE64 | CompactSize count
// of BIP30 coinbases | each: height LE32, txid (32). The unspent coins are not in it.
//
// Unspent run: magic `73 73 75 72` ("ssur") | version 0x01 | first LE32 | last LE32 | count LE64 |
// count records, each the coin's chainstate key then its chainstate value, exactly as Bitcoin Core
// stores them before obfuscation ('C' | txid | VARINT(vout), then coins/coin.h's value), in strictly
// increasing key-byte order. A run is the sorted input of a chainstate writer: runs of disjoint
// ranges merge into the database's own order without decoding a coin.
//
// Decoders take nothing on trust: a short input is EndOfData, bytes after the end TrailingData, a
// wrong magic BadMagic; an unknown version, a range other than 1 ≤ first ≤ last, counts that cannot
// hold (unspent above outputs, script-checked inputs above inputs, more BIP30 coinbases than
// blocks), a failure outside the range, a flag other than 0/1, a reason that is not printable, BIP30
// coinbases whose heights are not increasing within the range, keys out of order, a key or value in other than its one canonical form, a
// coin's height outside the range or amount outside MoneyRange are InvalidValue; a reason above its
// limit SizeTooLarge. Nothing is allocated from a count.
//
// SerializePartial, DeserializePartial and SerializeUnspentRun are pure and thread-safe; a reader or
// a merger is used by one thread at a time.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/error.h>
#include <ibdkit/swiftsync/check_range.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace ibdkit::swiftsync {

inline constexpr std::array<uint8_t, 4> PARTIAL_MAGIC{0x73, 0x73, 0x70, 0x74};
inline constexpr uint8_t PARTIAL_VERSION = 0x01;       ///< an outpoints-mode partial
inline constexpr uint8_t PARTIAL_VERSION_COINS = 0x02; ///< a coins-mode partial
inline constexpr std::array<uint8_t, 4> UNSPENT_RUN_MAGIC{0x73, 0x73, 0x75, 0x72};
inline constexpr uint8_t UNSPENT_RUN_VERSION = 0x01;
/// Longest failure reason a partial carries (Core's reject reasons are far shorter).
inline constexpr std::size_t MAX_FAILURE_REASON = 256;

/// `p` without its unspent coins, in the layout of the header comment (the version by p.mode).
/// Preconditions (asserted): 1 ≤ p.from ≤ p.to; a failure's reason printable and at most
/// MAX_FAILURE_REASON bytes; in outpoints mode no script-checked inputs and no BIP30 coinbases.
std::vector<uint8_t> SerializePartial(const Partial& p);
/// The partial `bytes` hold, with no unspent coins; the errors of the header comment.
Result<Partial> DeserializePartial(std::span<const uint8_t> bytes);

/// `coins` (a range's hinted-unspent coins, any order) sorted into chainstate key order as a run
/// for the range first..last. Errors: two coins with one outpoint (InvalidValue: a chain whose
/// hinted-unspent outputs repeat a transaction id, which no UTXO set can hold).
Result<std::vector<uint8_t>> SerializeUnspentRun(uint32_t first, uint32_t last,
                                                 std::span<const std::pair<OutPoint, Coin>> coins);

/// A cursor over one run's records; the bytes must outlive it.
class UnspentRunReader {
public:
    /// Checks the header; the records are checked as they are read.
    static Result<UnspentRunReader> Open(std::span<const uint8_t> bytes);

    /// The first and last height of the run, as its header says.
    uint32_t first() const noexcept { return m_first; }
    uint32_t last() const noexcept { return m_last; }
    /// The number of records the header claims (checked against the records by the last Next).
    uint64_t count() const noexcept { return m_count; }

    /// The next record into `outpoint` and `coin`: true, or false after the last record (then
    /// the records were exactly `count()` and nothing follows them). Errors as in the header; after
    /// one the reader stays where it was.
    Result<bool> Next(OutPoint& outpoint, Coin& coin);
    /// The chainstate key of the record Next() returned last.
    std::span<const uint8_t> key() const noexcept { return m_key; }

private:
    UnspentRunReader() = default;
    std::span<const uint8_t> m_rest;
    std::vector<uint8_t> m_key;   ///< the last record's key
    std::vector<uint8_t> m_value; ///< the last record's value, encoded again (the canonical check)
    uint32_t m_first{0}, m_last{0};
    uint64_t m_count{0}, m_read{0};
};

/// The records of several runs in chainstate key order (a k-way merge).
class UnspentRunMerger {
public:
    /// Opens every run (errors: Open's, naming which run). The runs' bytes must outlive the merger
    /// (the span holding them need not).
    static Result<std::unique_ptr<UnspentRunMerger>> Open(std::span<const std::span<const uint8_t>> runs);
    ~UnspentRunMerger();

    /// As UnspentRunReader::Next over all runs; an outpoint in two runs is InvalidValue.
    Result<bool> Next(OutPoint& outpoint, Coin& coin);

private:
    UnspentRunMerger();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace ibdkit::swiftsync
