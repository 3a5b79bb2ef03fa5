// ibdkit/memory/policy.h — the five buffer-memory policies as types, and their runtime names.
//
// A policy names the byte container DataStream<Policy> keeps its bytes in:
//  - Plain, ZeroAfterFree, BarrierOnly: std::vector<std::byte, A>, exactly as Bitcoin Core's
//    DataStream (SerializeData) does, so libstdc++'s slow per-element paths for custom allocators
//    are reproduced and the seed PR's comparison is measured faithfully;
//  - Secure, Hardened: ibdkit's ByteBuffer, which copies with memcpy and cleanses only the bytes
//    that were ever written.
#pragma once

#include <ibdkit/memory/allocators.h>
#include <ibdkit/memory/byte_buffer.h>
#include <ibdkit/memory/locked_pool.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace ibdkit {

enum class PolicyId { Plain, ZeroAfterFree, BarrierOnly, Secure, Hardened };

namespace policy {
struct Plain {
    static constexpr PolicyId id = PolicyId::Plain;
    static constexpr std::string_view name = "plain";
    using Buffer = std::vector<std::byte>;
};
struct ZeroAfterFree {
    static constexpr PolicyId id = PolicyId::ZeroAfterFree;
    static constexpr std::string_view name = "zero-after-free";
    using Buffer = std::vector<std::byte, ZeroAfterFreeAllocator<std::byte>>;
};
struct BarrierOnly {
    static constexpr PolicyId id = PolicyId::BarrierOnly;
    static constexpr std::string_view name = "barrier-only";
    using Buffer = std::vector<std::byte, BarrierOnlyAllocator<std::byte>>;
};
struct Secure {
    static constexpr PolicyId id = PolicyId::Secure;
    static constexpr std::string_view name = "secure";
    using Buffer = ByteBuffer<SecureAllocator<std::byte>>;
};
struct Hardened {
    static constexpr PolicyId id = PolicyId::Hardened;
    static constexpr std::string_view name = "hardened";
    /// Bytes kept inline before the first heap block: covers P2P headers, chainstate keys and
    /// values, and a CompactSize written ahead of its payload.
    static constexpr std::size_t INLINE_BYTES = 64;
    using Buffer = ByteBuffer<HardenedAllocator<std::byte>, INLINE_BYTES>;
};
} // namespace policy

/// Core's choice, the default wherever a policy is not named.
using DefaultPolicy = policy::ZeroAfterFree;

inline constexpr std::array<PolicyId, 5> ALL_POLICIES{PolicyId::Plain, PolicyId::ZeroAfterFree,
                                                      PolicyId::BarrierOnly, PolicyId::Secure,
                                                      PolicyId::Hardened};

/// "plain", "zero-after-free", "barrier-only", "secure", "hardened".
std::string_view PolicyName(PolicyId id) noexcept;
/// Parses a policy name; also accepts '_' for '-'. nullopt if unknown.
std::optional<PolicyId> ParsePolicy(std::string_view name) noexcept;

/// Calls fn(PolicyTag{}) with the policy type for a runtime id: the bridge from a --policy flag to
/// templates. Example: VisitPolicy(id, [&]<typename P>(P) { run<P>(); });
template <typename Fn>
decltype(auto) VisitPolicy(PolicyId id, Fn&& fn)
{
    switch (id) {
    case PolicyId::Plain: return fn(policy::Plain{});
    case PolicyId::ZeroAfterFree: return fn(policy::ZeroAfterFree{});
    case PolicyId::BarrierOnly: return fn(policy::BarrierOnly{});
    case PolicyId::Secure: return fn(policy::Secure{});
    case PolicyId::Hardened: break;
    }
    return fn(policy::Hardened{});
}

} // namespace ibdkit
