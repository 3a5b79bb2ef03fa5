// BIP 456's hintsfile: Elias-Fano lists, the file's parser and its atomic writer.
#include <ibdkit/common/atomic_file.h>
#include <ibdkit/common/write_guard.h>
#include <ibdkit/swiftsync/hints.h>

#include <ibdkit/encoding/endian.h>
#include <ibdkit/encoding/serialize.h>

#include "stream/streams.h"

#include "common/buffered_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace ibdkit::swiftsync {

namespace fs = std::filesystem;

namespace {

// ℓ = ⌊log2((m + 1) / n)⌋ for n ≥ 1 and m + 1 ≥ n (then the quotient is at least 1, and the floor
// of log2 of the real quotient equals that of its integer part).
unsigned LowBits(uint64_t m, uint64_t n) noexcept
{
    const uint64_t q = (m + 1) / n;
    return unsigned(63 - std::countl_zero(q));
}

// Bits appended from the most significant bit of each byte.
class BitWriter {
public:
    explicit BitWriter(std::vector<uint8_t>& out) : m_out(out) {}
    void Put(bool bit)
    {
        if (m_used == 0) m_out.push_back(0);
        if (bit) m_out.back() |= uint8_t(0x80u >> m_used);
        m_used = (m_used + 1) & 7;
    }

private:
    std::vector<uint8_t>& m_out;
    unsigned m_used{0};
};

// Bits read from the most significant bit of each byte of a span known to hold `bits` bits.
class BitReader {
public:
    BitReader(std::span<const uint8_t> bytes, uint64_t bits) : m_bytes(bytes), m_bits(bits) {}
    bool AtEnd() const noexcept { return m_pos >= m_bits; }
    bool Get() noexcept
    {
        const bool bit = (m_bytes[std::size_t(m_pos >> 3)] >> (7 - (m_pos & 7))) & 1;
        ++m_pos;
        return bit;
    }
    // Whether every bit from here to the end of the last byte is 0 (canonical padding).
    bool RestIsZero() const noexcept
    {
        for (uint64_t p = m_pos; p < uint64_t(m_bytes.size()) * 8; ++p) {
            if ((m_bytes[std::size_t(p >> 3)] >> (7 - (p & 7))) & 1) return false;
        }
        return true;
    }

private:
    std::span<const uint8_t> m_bytes;
    uint64_t m_bits;
    uint64_t m_pos{0};
};

struct VectorSink {
    std::vector<uint8_t>& out;
    void write(std::span<const std::byte> b)
    {
        const auto* p = reinterpret_cast<const uint8_t*>(b.data());
        out.insert(out.end(), p, p + b.size());
    }
};

Error Invalid(const char* what) { return Error{Errc::InvalidValue, std::string("Elias-Fano list: ") + what}; }

} // namespace

void AppendEliasFano(std::vector<uint8_t>& out, std::span<const uint32_t> indices)
{
    VectorSink sink{out};
    WriteCompactSize(sink, indices.size());
    if (indices.empty()) return;
    const uint64_t n = indices.size(), m = indices.back();
    WriteCompactSize(sink, m);
    const unsigned l = LowBits(m, n);
    BitWriter low(out);
    for (const uint32_t v : indices) {
        for (unsigned b = 0; b < l; ++b) low.Put((uint64_t(v) >> b) & 1);
    }
    BitWriter high(out);
    uint64_t prev = 0;
    for (const uint32_t v : indices) {
        const uint64_t h = uint64_t(v) >> l;
        assert(h >= prev);
        for (uint64_t z = prev; z < h; ++z) high.Put(false);
        high.Put(true);
        prev = h;
    }
}

std::vector<uint8_t> EncodeEliasFano(std::span<const uint32_t> indices)
{
    std::vector<uint8_t> out;
    AppendEliasFano(out, indices);
    return out;
}

Result<std::vector<uint32_t>> DecodeEliasFano(std::span<const uint8_t> bytes, std::size_t* consumed)
{
    uint64_t n = 0, m = 0;
    std::size_t head = 0;
    auto sizes = CatchDecode([&] {
        SpanReader r(bytes);
        n = ReadCompactSize(r, /*range_check=*/false);
        if (n != 0) m = ReadCompactSize(r, /*range_check=*/false);
        head = bytes.size() - r.size();
        return true;
    });
    if (!sizes) return sizes.error();
    if (n == 0) {
        *consumed = head;
        return std::vector<uint32_t>{};
    }
    if (n > UINT32_MAX) return Invalid("more than 2^32 - 1 indices");
    if (m > UINT32_MAX) return Invalid("largest index above 2^32 - 1");
    if (m + 1 < n) return Invalid("more indices than values up to the largest");
    const unsigned l = LowBits(m, n);
    const uint64_t low_bits = n * l, high_bits = n + (m >> l);
    const uint64_t low_bytes = (low_bits + 7) / 8, high_bytes = (high_bits + 7) / 8;
    if (bytes.size() - head < low_bytes || bytes.size() - head - low_bytes < high_bytes) {
        return Error{Errc::EndOfData, "Elias-Fano list: truncated"};
    }
    BitReader low(bytes.subspan(head, std::size_t(low_bytes)), low_bits);
    BitReader high(bytes.subspan(std::size_t(head + low_bytes), std::size_t(high_bytes)), high_bits);
    // n ≤ high_bits ≤ 8 · high_bytes, and those bytes are in `bytes`: the allocation is bounded by
    // input really present.
    std::vector<uint32_t> out;
    out.reserve(std::size_t(n));
    uint64_t hi = 0;
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t lo = 0;
        for (unsigned b = 0; b < l; ++b) lo |= uint64_t(low.Get()) << b;
        while (true) {
            if (high.AtEnd()) return Invalid("unary high part runs past its length");
            if (high.Get()) break;
            ++hi;
        }
        const uint64_t v = (hi << l) | lo;
        if (v > m) return Invalid("index above the largest");
        if (!out.empty() && v <= out.back()) return Invalid("indices not strictly increasing");
        out.push_back(uint32_t(v));
    }
    if (out.back() != m) return Invalid("last index differs from the largest");
    if (!low.RestIsZero() || !high.RestIsZero()) return Invalid("padding bits set");
    *consumed = std::size_t(head + low_bytes + high_bytes);
    return out;
}

bool IsBip30Unspendable(ChainType chain, int height, const BlockHash& hash) noexcept
{
    if (chain != ChainType::MAIN || (height != 91722 && height != 91812)) return false;
    static const BlockHash h91722 = *BlockHash::FromHex("00000000000271a2dc26e7667f8419f2e15416dc6955e5a6c6cdf3f2574dd08e");
    static const BlockHash h91812 = *BlockHash::FromHex("00000000000af0aed4792b1acee3d966af36cf5def14935db8de83d6f9306f2f");
    return hash == (height == 91722 ? h91722 : h91812);
}

// ---- Hints -----------------------------------------------------------------------------------

Result<Hints> Hints::Parse(std::vector<uint8_t> bytes)
{
    if (bytes.size() < HINTS_HEADER_SIZE) return Error{Errc::EndOfData, "hintsfile: shorter than its header"};
    if (!std::equal(HINTS_MAGIC.begin(), HINTS_MAGIC.end(), bytes.begin())) return Error{Errc::BadMagic, "hintsfile: bad magic"};
    if (bytes[4] != HINTS_VERSION) {
        return Error{Errc::InvalidValue, "hintsfile: unsupported version " + std::to_string(bytes[4])};
    }
    Hints h;
    h.m_height = ReadLE32(bytes.data() + 5);
    // Each list takes at least one byte: never more offsets than bytes.
    h.m_offsets.reserve(std::min<std::size_t>(h.m_height, bytes.size() - HINTS_HEADER_SIZE) + 1);
    std::size_t pos = HINTS_HEADER_SIZE;
    for (uint32_t height = 1; height <= h.m_height; ++height) {
        if (pos == bytes.size()) {
            return Error{Errc::EndOfData, "hintsfile: " + std::to_string(height - 1) + " block lists for height " +
                                              std::to_string(h.m_height)};
        }
        std::size_t used = 0;
        auto list = DecodeEliasFano(std::span<const uint8_t>(bytes).subspan(pos), &used);
        if (!list) return Error{list.error().code, "hintsfile: block " + std::to_string(height) + ": " + list.error().message};
        h.m_offsets.push_back(pos);
        h.m_total += list->size();
        pos += used;
    }
    if (pos != bytes.size()) {
        return Error{Errc::TrailingData, "hintsfile: bytes after the " + std::to_string(h.m_height) + " block lists of its height"};
    }
    h.m_offsets.push_back(pos);
    h.m_bytes = std::move(bytes);
    return h;
}

Result<Hints> Hints::Read(const fs::path& path)
{
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) return Error{Errc::Corrupt, "cannot read " + path.string() + ": " + ec.message()};
    std::ifstream f(path, std::ios::binary);
    std::vector<uint8_t> bytes(static_cast<std::size_t>(size));
    if (!f || !f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size))) {
        return Error{Errc::Corrupt, "cannot read " + path.string()};
    }
    return Parse(std::move(bytes));
}

std::span<const uint8_t> Hints::Encoded(uint32_t h) const noexcept
{
    assert(h >= 1 && h <= m_height);
    return std::span<const uint8_t>(m_bytes).subspan(m_offsets[h - 1], m_offsets[h] - m_offsets[h - 1]);
}

std::vector<uint32_t> Hints::Indices(uint32_t h) const
{
    std::size_t used = 0;
    auto list = DecodeEliasFano(Encoded(h), &used);
    assert(list.ok()); // checked by Parse
    return std::move(list).value();
}

// ---- HintsWriter -----------------------------------------------------------------------------

struct HintsWriter::Impl {
    explicit Impl(const fs::path& out) : file(out), partial(file.Temp()) {}
    AtomicFile file; ///< written under file.Temp(), renamed by Finish() (or removed)
    const fs::path& partial;
    int fd{-1};
    std::unique_ptr<BufferedFileWriter> w;
    uint32_t height{0}, written{0};
};

Result<std::unique_ptr<HintsWriter>> HintsWriter::Create(const fs::path& out, uint32_t height)
{
    if (auto refused = CheckOutputFile(out)) return *refused;
    auto impl = std::make_unique<Impl>(out);
    impl->height = height;
    impl->fd = ::open(impl->partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (impl->fd < 0) return Error{Errc::Corrupt, "cannot create " + impl->partial.string() + ": " + std::strerror(errno)};
    impl->w = std::make_unique<BufferedFileWriter>(impl->fd, /*drop_behind=*/false);
    uint8_t header[HINTS_HEADER_SIZE];
    std::memcpy(header, HINTS_MAGIC.data(), 4);
    header[4] = HINTS_VERSION;
    WriteLE32(header + 5, height);
    impl->w->write(std::as_bytes(std::span<const uint8_t>(header)));
    std::unique_ptr<HintsWriter> writer(new HintsWriter());
    writer->m_impl = std::move(impl);
    return writer;
}

HintsWriter::~HintsWriter()
{
    if (!m_impl) return;
    if (m_impl->fd >= 0) ::close(m_impl->fd);
}

std::optional<Error> HintsWriter::AppendEncoded(std::span<const uint8_t> list)
{
    assert(m_impl->written < m_impl->height);
    ++m_impl->written;
    m_impl->w->write(std::as_bytes(list));
    if (!m_impl->w->ok()) return Error{Errc::Corrupt, "cannot write " + m_impl->partial.string() + ": " + std::strerror(m_impl->w->Errno())};
    return std::nullopt;
}

std::optional<Error> HintsWriter::Append(std::span<const uint32_t> indices)
{
    return AppendEncoded(EncodeEliasFano(indices));
}

Result<uint64_t> HintsWriter::Finish()
{
    Impl& m = *m_impl;
    if (m.written != m.height) {
        return Error{Errc::InvalidValue, "hintsfile: " + std::to_string(m.written) + " block lists written for height " +
                                             std::to_string(m.height)};
    }
    if (!m.w->DrainAndSync()) return Error{Errc::Corrupt, "cannot write " + m.partial.string() + ": " + std::strerror(m.w->Errno())};
    const uint64_t bytes = m.w->Bytes();
    ::close(m.fd);
    m.fd = -1;
    if (auto e = m.file.Commit()) return Error{Errc::Corrupt, e->message};
    return bytes;
}

} // namespace ibdkit::swiftsync
