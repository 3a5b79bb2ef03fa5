// Fuzz: every encoding decoder entry point on arbitrary bytes. Each must either decode, in which
// case re-encoding gives back exactly the bytes it consumed (canonical forms only), or throw
// DecodeError — never crash, hang or allocate from an unchecked length.
#include <ibdkit/encoding/serialize.h>

#include "stream/streams.h"

#include <cstdlib>
#include <cstring>

using namespace ibdkit;

namespace {
void Check(bool ok)
{
    if (!ok) std::abort();
}

template <typename F>
void Consumed(std::span<const std::byte> in, F&& decode_and_reencode)
{
    SpanReader r(in);
    try {
        auto out = decode_and_reencode(r);
        const std::size_t used = in.size() - r.size();
        Check(out.size() == used);
        Check(used == 0 || std::memcmp(out.data(), in.data(), used) == 0);
    } catch (const DecodeError&) {
    }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0) return 0;
    const uint8_t selector = data[0];
    std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data + 1), size - 1);
    switch (selector % 6) {
    case 0:
        Consumed(in, [](SpanReader& r) {
            const uint64_t n = ReadCompactSize(r, /*range_check=*/false);
            DataStream<policy::Plain> s;
            WriteCompactSize(s, n);
            Check(s.size() == GetSizeOfCompactSize(n));
            return std::vector<std::byte>(s.begin(), s.end());
        });
        break;
    case 1:
        Consumed(in, [](SpanReader& r) {
            const uint64_t n = ReadVarInt<uint64_t>(r);
            DataStream<policy::Plain> s;
            WriteVarInt(s, n);
            Check(s.size() == GetSizeOfVarInt(n));
            return std::vector<std::byte>(s.begin(), s.end());
        });
        break;
    case 2:
        Consumed(in, [](SpanReader& r) {
            const uint32_t n = ReadVarInt<uint32_t>(r);
            DataStream<policy::Plain> s;
            WriteVarInt(s, n);
            return std::vector<std::byte>(s.begin(), s.end());
        });
        break;
    case 3:
        Consumed(in, [](SpanReader& r) {
            std::vector<uint8_t> v;
            r >> v;
            return SerializeToVector<std::vector<std::byte>>(v);
        });
        break;
    case 4:
        Consumed(in, [](SpanReader& r) {
            std::vector<std::vector<uint16_t>> v;
            r >> v;
            return SerializeToVector<std::vector<std::byte>>(v);
        });
        break;
    case 5: {
        // DataStream operations driven by the input, for the policies with their own containers.
        DataStream<policy::Hardened> h;
        DataStream<policy::ZeroAfterFree> z;
        for (std::size_t i = 0; i + 1 < in.size(); i += 2) {
            const auto op = uint8_t(in[i]) % 5;
            const auto arg = uint8_t(in[i + 1]);
            try {
                switch (op) {
                case 0: {
                    std::vector<std::byte> chunk(arg, std::byte{uint8_t(i)});
                    h.write(chunk);
                    z.write(chunk);
                    break;
                }
                case 1: {
                    std::vector<std::byte> a(arg), b(arg);
                    bool ha = true, zb = true;
                    try { h.read(a); } catch (const DecodeError&) { ha = false; }
                    try { z.read(b); } catch (const DecodeError&) { zb = false; }
                    Check(ha == zb && a == b);
                    break;
                }
                case 2: Check(h.Rewind(arg) == z.Rewind(arg)); break;
                case 3: h.Compact(); z.Compact(); break;
                case 4: h.resize(arg); z.resize(arg); break;
                }
            } catch (const DecodeError&) {
            }
            Check(h.size() == z.size());
            Check(h.size() == 0 || std::memcmp(h.data(), z.data(), h.size()) == 0);
        }
        break;
    }
    }
    return 0;
}
