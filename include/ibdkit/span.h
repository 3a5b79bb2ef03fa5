// ibdkit/span.h — conversions between byte-span flavours (std::byte and unsigned char).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace ibdkit {

/// Bytes of any contiguous range of 1-byte elements, as std::byte.
template <typename R>
std::span<const std::byte> MakeByteSpan(const R& r) noexcept
{
    static_assert(sizeof(*std::data(r)) == 1);
    return {reinterpret_cast<const std::byte*>(std::data(r)), std::size(r)};
}
template <typename R>
std::span<std::byte> MakeWritableByteSpan(R&& r) noexcept
{
    static_assert(sizeof(*std::data(r)) == 1);
    return {reinterpret_cast<std::byte*>(std::data(r)), std::size(r)};
}
inline std::span<const std::byte> MakeByteSpan(const void* p, std::size_t n) noexcept
{
    return {static_cast<const std::byte*>(p), n};
}
inline const uint8_t* UCharCast(const std::byte* p) noexcept { return reinterpret_cast<const uint8_t*>(p); }
inline uint8_t* UCharCast(std::byte* p) noexcept { return reinterpret_cast<uint8_t*>(p); }
inline std::span<const uint8_t> UCharSpan(std::span<const std::byte> s) noexcept
{
    return {UCharCast(s.data()), s.size()};
}

} // namespace ibdkit
