// ibdkit/swiftsync/hints.h — BIP 456's hintsfile: which outputs of each block are still unspent at
// a height n, one Elias-Fano list of output indices per block 1..n.
//
// File (docs/formats.md §12): magic `55 54 58 4f` | version 0x00 | n as LE32 | for each height
// 1..n one Elias-Fano list — nothing else, no count: the number of lists is n.
// Elias-Fano list: CompactSize N (indices) | CompactSize M (the largest index) | L | H, where
// ℓ = ⌊log2((M+1)/N)⌋, L holds each index's ℓ low bits (least significant first) and H each index's
// high part as the gap from the previous one in unary (that many 0 bits, then a 1), both packed
// into bytes from the most significant bit and padded with 0 bits to whole bytes; N = 0 is the one
// byte 0x00 (no M, L, H).
//
// An index counts only the block's spendable outputs (BIP 456/457): outputs are numbered in block
// order (transactions in order, outputs in order) skipping unspendable ones — a script starting
// with OP_RETURN, a script longer than MAX_SCRIPT_SIZE, and on mainnet the coinbase outputs of the
// two blocks whose coinbase a later block duplicated (BIP 30; Core's IsBIP30Unspendable). Outputs
// spent later in the same block are counted.
//
// The decoder takes nothing on trust: a list that runs past the end (EndOfData), a count or index
// above 2^32 - 1, N above M + 1, indices not strictly increasing, a last index other than M, set
// padding bits (InvalidValue), a non-minimal CompactSize (NonCanonicalCompactSize), fewer lists than
// n (EndOfData) or bytes after the n-th list (TrailingData) are typed errors, and nothing is
// allocated before the bytes it stands for have been seen.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/compressor.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/block.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ibdkit::swiftsync {

inline constexpr std::array<uint8_t, 4> HINTS_MAGIC{0x55, 0x54, 0x58, 0x4f};
inline constexpr uint8_t HINTS_VERSION = 0x00;
/// Magic, version and height.
inline constexpr std::size_t HINTS_HEADER_SIZE = 9;

// ---- Elias-Fano --------------------------------------------------------------------------------

/// Appends the Elias-Fano list of `indices` to `out`. Precondition: strictly increasing.
void AppendEliasFano(std::vector<uint8_t>& out, std::span<const uint32_t> indices);
/// The list as a new vector.
std::vector<uint8_t> EncodeEliasFano(std::span<const uint32_t> indices);
/// Decodes one list from the front of `bytes` (more may follow); *consumed receives its length.
/// Every check of the header comment; the result is strictly increasing.
Result<std::vector<uint32_t>> DecodeEliasFano(std::span<const uint8_t> bytes, std::size_t* consumed);

// ---- which outputs count -------------------------------------------------------------------------

/// The mainnet blocks 91,722 and 91,812, whose coinbase outputs a later block overwrote (BIP 30):
/// they can never be spent. False on every other network, height or hash.
bool IsBip30Unspendable(ChainType chain, int height, const BlockHash& hash) noexcept;

/// Calls fn(tx_index, vout, spendable_index) for each spendable output of `block`, in block order;
/// `bip30_unspendable` (IsBip30Unspendable of the block) skips the coinbase's outputs.
template <typename Fn>
void ForEachSpendableOutput(const Block& block, bool bip30_unspendable, Fn&& fn)
{
    uint32_t index = 0;
    for (std::size_t t = 0; t < block.vtx.size(); ++t) {
        if (t == 0 && bip30_unspendable) continue;
        const auto outs = block.vtx[t].vout();
        for (uint32_t o = 0; o < outs.size(); ++o) {
            if (IsUnspendable(outs[o].script_pubkey)) continue; // OP_RETURN first, or above MAX_SCRIPT_SIZE
            fn(t, o, index++);
        }
    }
}

// ---- the file ------------------------------------------------------------------------------------

/// A hintsfile held in memory as its bytes, every list checked once when parsed, with where each
/// block's list starts. Lists are decoded again on demand (the decoded form is 4 bytes per unspent
/// output; the encoded one a fraction of that).
class Hints {
public:
    /// Parses and checks a whole file's bytes (taken over). Errors as in the header comment;
    /// a wrong magic is BadMagic, an unknown version InvalidValue.
    static Result<Hints> Parse(std::vector<uint8_t> bytes);
    /// Reads and parses a file; an unreadable file is Errc::Corrupt with the system's reason.
    static Result<Hints> Read(const std::filesystem::path& path);

    /// The height n the file describes (lists for blocks 1..n).
    uint32_t height() const noexcept { return m_height; }
    /// Unspent outputs over all blocks.
    uint64_t total() const noexcept { return m_total; }
    /// The unspent spendable-output indices of the block at `h` (1 ≤ h ≤ height()), increasing.
    std::vector<uint32_t> Indices(uint32_t h) const;
    /// The encoded list of block `h`.
    std::span<const uint8_t> Encoded(uint32_t h) const noexcept;
    const std::vector<uint8_t>& bytes() const noexcept { return m_bytes; }

private:
    Hints() = default;
    std::vector<uint8_t> m_bytes;
    std::vector<uint64_t> m_offsets; ///< start of block h's list at [h - 1]; the file's end last
    uint32_t m_height{0};
    uint64_t m_total{0};
};

/// Writes a hintsfile list by list under a temporary name (AtomicFile, ibdkit/atomic_file.h:
/// `out.partial-PID`), renamed to `out` once the n-th list is written and synced: a reader never
/// sees a partial file under the final name. Destroying an unfinished writer, or a signal the CLI
/// catches, removes the partial file.
class HintsWriter {
public:
    /// Creates the partial file and writes the header for height `height`. Errc::Refused for a
    /// file ibdkit may not write (common/write_guard.h, CheckOutputFile: inside a Core data
    /// directory, or a folder that does not exist).
    static Result<std::unique_ptr<HintsWriter>> Create(const std::filesystem::path& out, uint32_t height);
    ~HintsWriter();
    HintsWriter(const HintsWriter&) = delete;
    HintsWriter& operator=(const HintsWriter&) = delete;

    /// Appends the next block's list (already encoded: AppendEliasFano). Writing more lists than
    /// the height is a programmer error.
    std::optional<Error> AppendEncoded(std::span<const uint8_t> list);
    /// Encodes and appends the next block's unspent indices (strictly increasing).
    std::optional<Error> Append(std::span<const uint32_t> indices);
    /// Checks that `height` lists were written, syncs, renames; returns the file's size.
    Result<uint64_t> Finish();

private:
    HintsWriter() = default;
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace ibdkit::swiftsync
