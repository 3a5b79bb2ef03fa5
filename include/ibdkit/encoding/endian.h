// ibdkit/encoding/endian.h — little-endian loads and stores on raw bytes.
#pragma once

#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>

namespace ibdkit {

template <std::unsigned_integral U>
constexpr U ByteSwap(U v) noexcept
{
    if constexpr (sizeof(U) == 1) {
        return v;
    } else if constexpr (sizeof(U) == 2) {
        return U(__builtin_bswap16(v));
    } else if constexpr (sizeof(U) == 4) {
        return U(__builtin_bswap32(v));
    } else {
        return U(__builtin_bswap64(v));
    }
}

template <std::unsigned_integral U>
inline U LoadLE(const void* p) noexcept
{
    U v;
    std::memcpy(&v, p, sizeof(U));
    if constexpr (std::endian::native == std::endian::big) v = ByteSwap(v);
    return v;
}

template <std::unsigned_integral U>
inline void StoreLE(void* p, U v) noexcept
{
    if constexpr (std::endian::native == std::endian::big) v = ByteSwap(v);
    std::memcpy(p, &v, sizeof(U));
}

template <std::unsigned_integral U>
inline U LoadBE(const void* p) noexcept
{
    U v;
    std::memcpy(&v, p, sizeof(U));
    if constexpr (std::endian::native == std::endian::little) v = ByteSwap(v);
    return v;
}

template <std::unsigned_integral U>
inline void StoreBE(void* p, U v) noexcept
{
    if constexpr (std::endian::native == std::endian::little) v = ByteSwap(v);
    std::memcpy(p, &v, sizeof(U));
}

inline uint16_t ReadLE16(const void* p) noexcept { return LoadLE<uint16_t>(p); }
inline uint32_t ReadLE32(const void* p) noexcept { return LoadLE<uint32_t>(p); }
inline uint64_t ReadLE64(const void* p) noexcept { return LoadLE<uint64_t>(p); }
inline void WriteLE16(void* p, uint16_t v) noexcept { StoreLE(p, v); }
inline void WriteLE32(void* p, uint32_t v) noexcept { StoreLE(p, v); }
inline void WriteLE64(void* p, uint64_t v) noexcept { StoreLE(p, v); }
inline uint32_t ReadBE32(const void* p) noexcept { return LoadBE<uint32_t>(p); }
inline uint64_t ReadBE64(const void* p) noexcept { return LoadBE<uint64_t>(p); }
inline void WriteBE32(void* p, uint32_t v) noexcept { StoreBE(p, v); }
inline void WriteBE64(void* p, uint64_t v) noexcept { StoreBE(p, v); }

} // namespace ibdkit
