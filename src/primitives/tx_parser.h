// The one transaction parser behind DecodeTransaction, DecodeBlock, TxView and BlockView.
//
// ParseTx walks Core's transaction encoding (docs/formats.md §2) over a byte range with bounds checks,
// throws DecodeError with the same codes Core's stream reads would give (EndOfData,
// NonCanonicalCompactSize, SizeTooLarge, SuperfluousWitness, UnknownOptionalData), and reports
// the pieces to a Sink. The view front end uses a sink that does nothing; the owning front end
// builds TxIn/TxOut objects. Because both run this code, they accept and reject the same bytes.
#pragma once

#include <ibdkit/encoding/endian.h>
#include <ibdkit/encoding/serialize.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/block_view.h>

#include <cstdint>

namespace ibdkit::detail {

[[noreturn]] void ThrowEndOfData();
[[noreturn]] void ThrowNonCanonical();
[[noreturn]] void ThrowSizeTooLarge();
[[noreturn]] void ThrowSuperfluousWitness();
[[noreturn]] void ThrowUnknownOptionalData();

/// Bounds-checked reads over [p, end).
struct ByteCursor {
    const uint8_t* p;
    const uint8_t* end;

    std::size_t remaining() const noexcept { return std::size_t(end - p); }
    void Need(std::size_t n) const
    {
        if (n > remaining()) [[unlikely]] ThrowEndOfData();
    }
    uint8_t U8()
    {
        Need(1);
        return *p++;
    }
    uint32_t U32()
    {
        Need(4);
        const uint32_t v = LoadLE<uint32_t>(p);
        p += 4;
        return v;
    }
    uint64_t U64()
    {
        Need(8);
        const uint64_t v = LoadLE<uint64_t>(p);
        p += 8;
        return v;
    }
    /// Canonical CompactSize, range-checked against MAX_SIZE (as Core's ReadCompactSize).
    uint64_t CompactSize()
    {
        const uint8_t first = U8();
        if (first < 253) [[likely]] return first;
        uint64_t n;
        if (first == 253) {
            Need(2);
            n = LoadLE<uint16_t>(p);
            p += 2;
            if (n < 253) ThrowNonCanonical();
        } else if (first == 254) {
            Need(4);
            n = LoadLE<uint32_t>(p);
            p += 4;
            if (n < 0x10000u) ThrowNonCanonical();
        } else {
            Need(8);
            n = LoadLE<uint64_t>(p);
            p += 8;
            if (n < 0x100000000ULL) ThrowNonCanonical();
        }
        if (n > MAX_SIZE) ThrowSizeTooLarge();
        return n;
    }
    const uint8_t* Take(std::size_t n)
    {
        Need(n);
        const uint8_t* r = p;
        p += n;
        return r;
    }
};

/// A sink that records nothing (the view front end).
struct NullTxSink {
    void Inputs(uint64_t, std::size_t) {}
    void Input(const uint8_t*, const uint8_t*, std::size_t, uint32_t) {}
    void Outputs(uint64_t, std::size_t) {}
    void Output(int64_t, const uint8_t*, std::size_t) {}
    void WitnessStack(std::size_t, uint64_t, std::size_t) {}
    void WitnessItem(std::size_t, const uint8_t*, std::size_t) {}
};

/// How far ahead of the parse position to prefetch (ParseInputs, ParseOutputs).
inline constexpr std::size_t PREFETCH_AHEAD = 1536;

template <typename Sink>
inline void ParseInputs(ByteCursor& c, uint64_t n, Sink& sink)
{
    sink.Inputs(n, c.remaining());
    for (uint64_t i = 0; i < n; ++i) {
        // The walk skips most bytes (scripts), which hides it from the hardware prefetcher:
        // ask for the bytes a few inputs ahead (a hint only; never dereferenced).
        __builtin_prefetch(c.p + PREFETCH_AHEAD);
        const uint8_t* prevout = c.Take(36);
        const uint64_t len = c.CompactSize();
        const uint8_t* script = c.Take(std::size_t(len));
        const uint32_t seq = c.U32();
        sink.Input(prevout, script, std::size_t(len), seq);
    }
}

template <typename Sink>
inline void ParseOutputs(ByteCursor& c, uint64_t n, Sink& sink)
{
    sink.Outputs(n, c.remaining());
    for (uint64_t i = 0; i < n; ++i) {
        __builtin_prefetch(c.p + PREFETCH_AHEAD);
        const int64_t value = int64_t(c.U64());
        const uint64_t len = c.CompactSize();
        const uint8_t* script = c.Take(std::size_t(len));
        sink.Output(value, script, std::size_t(len));
    }
}

/// Core's UnserializeTransaction, step by step (docs/formats.md §2).
template <typename Sink>
inline TxLayout ParseTx(ByteCursor& c, bool allow_witness, Sink& sink)
{
    TxLayout l;
    l.witness_allowed = allow_witness;
    l.begin = c.p;
    (void)c.U32(); // version
    l.vin_count = c.p;
    uint8_t flags = 0;
    uint64_t n_in = c.CompactSize();
    uint64_t n_out = 0;
    if (n_in == 0 && allow_witness) {
        // A dummy (marker) or an empty input vector: read the flag byte.
        flags = c.U8();
        if (flags != 0) {
            l.vin_count = c.p;
            n_in = c.CompactSize();
            l.vin = c.p;
            ParseInputs(c, n_in, sink);
            n_out = c.CompactSize();
            l.vout = c.p;
            ParseOutputs(c, n_out, sink);
        } else {
            // Zero inputs, flag 0: no outputs are read (the 0 was the output count).
            l.vin = l.vout = c.p;
            sink.Inputs(0, c.remaining());
            sink.Outputs(0, c.remaining());
        }
    } else {
        l.vin = c.p;
        ParseInputs(c, n_in, sink);
        n_out = c.CompactSize();
        l.vout = c.p;
        ParseOutputs(c, n_out, sink);
    }
    l.wit = c.p;
    if ((flags & 1) && allow_witness) {
        flags ^= 1;
        bool any = false;
        for (uint64_t i = 0; i < n_in; ++i) {
            const uint64_t items = c.CompactSize();
            sink.WitnessStack(std::size_t(i), items, c.remaining());
            any |= items != 0;
            for (uint64_t j = 0; j < items; ++j) {
                const uint64_t len = c.CompactSize();
                const uint8_t* item = c.Take(std::size_t(len));
                sink.WitnessItem(std::size_t(i), item, std::size_t(len));
            }
        }
        if (!any) ThrowSuperfluousWitness();
        l.has_witness = true;
    }
    if (flags) ThrowUnknownOptionalData();
    l.lock = c.p;
    (void)c.U32();
    l.end = c.p;
    // Counts are bounded by the bytes they consumed (each input ≥ 41 bytes), so they fit.
    l.n_in = uint32_t(n_in);
    l.n_out = uint32_t(n_out);
    return l;
}

/// txid from the layout: one contiguous span without witness, three ranges with.
Txid ComputeTxid(const TxLayout& l) noexcept;
Wtxid ComputeWtxid(const TxLayout& l, const Txid& txid) noexcept;

} // namespace ibdkit::detail

namespace ibdkit::detail {

/// Core's block encoding: 80-byte header, CompactSize count, transactions with witness allowed.
/// begin(n, remaining) is called once with the count, then each(cursor) once per transaction.
template <typename Begin, typename Each>
inline const uint8_t* ParseBlock(ByteCursor& c, Begin&& begin, Each&& each)
{
    (void)c.Take(80);
    const uint64_t n = c.CompactSize();
    const uint8_t* first = c.p;
    begin(n, c.remaining());
    for (uint64_t i = 0; i < n; ++i) each(c);
    return first;
}

} // namespace ibdkit::detail
