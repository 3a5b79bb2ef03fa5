// src/memory/policy.h — the buffer-memory policies as types, their runtime ids and names, and the
// one list that everything iterating over policies is generated from.
//
// A policy names the byte container DataStream<Policy> keeps its bytes in:
//  - Plain, ZeroAfterFree, BarrierOnly: std::vector<std::byte, A>, exactly as Bitcoin Core's
//    DataStream (SerializeData) does, so libstdc++'s slow per-element paths for custom allocators
//    are reproduced and the seed PR's comparison is measured faithfully;
//  - Secure, Hardened: ibdkit's ByteBuffer, which copies with memcpy and cleanses only the bytes
//    that were ever written.
//
// Adding a policy is one entry in IBDKIT_BUFFER_POLICIES (memory/policy_id.h) plus its struct in namespace policy (with
// `id`, `name` and `Buffer`): PolicyId, ALL_POLICIES, AllPolicyTypes, VisitPolicy, ForEachPolicy,
// ParsePolicy, the CLI's --policy help and choices (PolicyNameList) and the per-policy benchmarks
// all follow from the list.
#pragma once

#include <ibdkit/memory/policy_id.h>

#include "memory/allocators.h"
#include "memory/byte_buffer.h"
#include "memory/locked_pool.h"

#include <array>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit {

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

/// A list of policy types (the same template arguments as AllPolicyTypes).
template <typename... P>
struct PolicyTypes {
    static constexpr std::size_t size = sizeof...(P);
    /// T<P...>, e.g. AllPolicyTypes::Apply<::testing::Types> for a typed test over every policy.
    template <template <typename...> class T>
    using Apply = T<P...>;
    /// Calls fn(P{}) for every type, in list order.
    template <typename Fn>
    static constexpr void ForEach(Fn&& fn)
    {
        (fn(P{}), ...);
    }
};

namespace detail {
struct PolicyListStart {};
template <typename... P>
PolicyTypes<P...> MakePolicyTypes(PolicyListStart, P...);
} // namespace detail

/// Every policy type, in list order.
#define IBDKIT_POLICY_TYPE_ARG(T) , policy::T{}
using AllPolicyTypes = decltype(detail::MakePolicyTypes(detail::PolicyListStart{} IBDKIT_BUFFER_POLICIES(IBDKIT_POLICY_TYPE_ARG)));
#undef IBDKIT_POLICY_TYPE_ARG

#define IBDKIT_POLICY_CHECK(T) static_assert(policy::T::id == PolicyId::T, "policy::" #T "::id must be PolicyId::" #T);
IBDKIT_BUFFER_POLICIES(IBDKIT_POLICY_CHECK)
#undef IBDKIT_POLICY_CHECK

static_assert(ALL_POLICIES.size() == AllPolicyTypes::size, "one id per policy type");

/// Calls fn(PolicyTag{}) for every policy type, in list order: registering one benchmark per policy,
/// one typed check per policy. Example: ForEachPolicy([&]<typename P>(P) { Register<P>(); });
template <typename Fn>
constexpr void ForEachPolicy(Fn&& fn)
{
    AllPolicyTypes::ForEach(fn);
}

/// Calls fn(PolicyTag{}) with the policy type for a runtime id: the bridge from a --policy flag to
/// templates. Example: VisitPolicy(id, [&]<typename P>(P) { run<P>(); });
template <typename Fn>
decltype(auto) VisitPolicy(PolicyId id, Fn&& fn)
{
#define IBDKIT_POLICY_CASE(T) \
    case PolicyId::T: return fn(policy::T{});
    switch (id) {
        IBDKIT_BUFFER_POLICIES(IBDKIT_POLICY_CASE)
    }
#undef IBDKIT_POLICY_CASE
    std::abort(); // not a PolicyId: a programmer error (ids come from ParsePolicy or ALL_POLICIES)
}

} // namespace ibdkit
