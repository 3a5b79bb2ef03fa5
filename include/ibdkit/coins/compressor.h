// ibdkit/coins/compressor.h — Core's amount and script compression for the chainstate and undo
// formats (compressor.h/.cpp in Bitcoin Core).
//
// Formats: docs/formats.md §5 and docs/chainstate.md.
//
//  - CompressAmount / DecompressAmount: the decimal-exponent packing of satoshi amounts.
//  - Script compression: the first VARINT doubles as a type tag.
//      0 + 20 bytes  P2PKH (OP_DUP OP_HASH160 <20> OP_EQUALVERIFY OP_CHECKSIG)
//      1 + 20 bytes  P2SH  (OP_HASH160 <20> OP_EQUAL)
//      2/3 + 32 (x)  P2PK with a compressed key 02/03
//      4/5 + 32 (x)  P2PK with an uncompressed key that is a valid curve point (4 | parity of y)
//      n >= 6        raw script of n - 6 bytes (a length above MAX_SCRIPT_SIZE decodes to a single
//                    OP_RETURN and the bytes are skipped, as Core does)
#pragma once

#include <ibdkit/encoding/serialize.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/primitives/script.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/primitives/transaction.h>

#include <array>
#include <cstdint>
#include <span>

namespace ibdkit {

/// Number of special script types (0..5) in the compressed format.
inline constexpr unsigned SPECIAL_SCRIPTS = 6;

/// Core's CompressAmount: 0 -> 0; else 1 + (9n + d - 1)·10 + e, or 1 + (n - 1)·10 + 9.
uint64_t CompressAmount(uint64_t n) noexcept;
/// Core's DecompressAmount (unsigned wrap-around on absurd inputs, as Core; never UB).
uint64_t DecompressAmount(uint64_t x) noexcept;

/// Script is unspendable in Core's sense: starts with OP_RETURN or is longer than MAX_SCRIPT_SIZE.
inline bool IsUnspendable(const Script& s) noexcept
{
    return (s.size() > 0 && s[0] == OP_RETURN) || s.size() > MAX_SCRIPT_SIZE;
}

/// A special-form compressed script: tag byte (0..5) + 20 or 32 payload bytes.
struct CompressedScript {
    std::array<uint8_t, 33> bytes{};
    uint8_t size{0}; ///< 21 or 33
    std::span<const uint8_t> span() const noexcept { return {bytes.data(), size}; }
};

/// Core's CompressScript. Returns true and fills `out` if the script has one of the special forms
/// (for 4/5 only when the 65-byte key is a valid curve point: libsecp256k1 parse); false otherwise.
bool CompressScript(std::span<const uint8_t> script, CompressedScript& out);
inline bool CompressScript(const Script& script, CompressedScript& out) { return CompressScript(script.span(), out); }

/// Payload bytes of special type `n_size` (0,1 -> 20; 2..5 -> 32; else 0).
constexpr unsigned GetSpecialScriptSize(unsigned n_size) noexcept
{
    return n_size < 2 ? 20 : n_size < SPECIAL_SCRIPTS ? 32 : 0;
}

/// Core's DecompressScript: rebuilds the script of special type n_size (0..5) from its payload
/// (20 or 32 bytes). Returns false when type 4/5 carries an x that is not on the curve (Core then
/// leaves the script empty; ibdkit's readers turn that into Errc::Corrupt).
bool DecompressScript(Script& script, unsigned n_size, std::span<const uint8_t> in);

// ---- serialization wrappers (Core's ScriptCompression / AmountCompression / TxOutCompression) ----

/// `s << CompressedScriptRef{script}` writes the compressed form; reading decompresses. A type
/// 4/5 record whose point is invalid throws DecodeError(Errc::Corrupt).
template <typename ScriptT>
struct ScriptCompressionRef {
    ScriptT& script;
};

/// Writes a script's bytes in compressed form (what `ScriptCompressionRef` writes).
template <WriteStream S>
void WriteCompressedScript(S& s, std::span<const uint8_t> script)
{
    CompressedScript c;
    if (CompressScript(script, c)) {
        s.write(MakeByteSpan(c.span()));
        return;
    }
    const uint32_t n = uint32_t(script.size()) + SPECIAL_SCRIPTS;
    WriteVarInt(s, n);
    s.write(MakeByteSpan(script));
}

template <WriteStream S>
void Serialize(S& s, const ScriptCompressionRef<const Script>& r)
{
    WriteCompressedScript(s, r.script.span());
}

template <ReadStream S>
void Unserialize(S& s, const ScriptCompressionRef<Script>& r)
{
    uint32_t n = ReadVarInt<uint32_t>(s);
    if (n < SPECIAL_SCRIPTS) {
        std::array<uint8_t, 32> payload;
        const unsigned len = GetSpecialScriptSize(n);
        s.read(std::as_writable_bytes(std::span<uint8_t>(payload.data(), len)));
        if (!DecompressScript(r.script, n, std::span<const uint8_t>(payload.data(), len))) {
            throw DecodeError(Errc::Corrupt, "compressed P2PK key is not a valid curve point");
        }
        return;
    }
    n -= SPECIAL_SCRIPTS;
    if (n > MAX_SCRIPT_SIZE) {
        // Overly long script: Core replaces it with a short invalid one and skips the bytes.
        const uint8_t op_return = OP_RETURN;
        r.script.assign(&op_return, 1);
        std::array<std::byte, 4096> sink;
        while (n > 0) {
            const uint32_t chunk = std::min<uint32_t>(n, uint32_t(sink.size()));
            s.read(std::span<std::byte>(sink.data(), chunk));
            n -= chunk;
        }
    } else {
        r.script.resize_uninit(n);
        s.read(std::as_writable_bytes(std::span<uint8_t>(r.script.data(), n)));
    }
}

/// A TxOut in compressed form: VARINT(CompressAmount(value)) | compressed script.
template <typename TxOutT>
struct TxOutCompressionRef {
    TxOutT& out;
};

template <WriteStream S>
void Serialize(S& s, const TxOutCompressionRef<const TxOut>& r)
{
    WriteVarInt(s, CompressAmount(uint64_t(r.out.value)));
    Serialize(s, ScriptCompressionRef<const Script>{r.out.script_pubkey});
}
template <ReadStream S>
void Unserialize(S& s, const TxOutCompressionRef<TxOut>& r)
{
    r.out.value = Amount(DecompressAmount(ReadVarInt<uint64_t>(s)));
    Unserialize(s, ScriptCompressionRef<Script>{r.out.script_pubkey});
}

} // namespace ibdkit
