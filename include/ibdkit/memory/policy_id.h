// ibdkit/memory/policy_id.h — the buffer policies by name and run-time id: what a run's options
// carry (the policies' types and VisitPolicy are private: src/memory/policy.h). The functions here
// are pure and thread-safe.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

/// THE list of buffer policies, in display order (tables, help texts, benchmark variants): one
/// X(Type) per struct in namespace ibdkit::policy; PolicyId::Type is its runtime id.
#define IBDKIT_BUFFER_POLICIES(X) \
    X(Plain)                      \
    X(ZeroAfterFree)              \
    X(BarrierOnly)                \
    X(Secure)                     \
    X(Hardened)

namespace ibdkit {

#define IBDKIT_POLICY_ENUMERATOR(T) T,
enum class PolicyId { IBDKIT_BUFFER_POLICIES(IBDKIT_POLICY_ENUMERATOR) };
#undef IBDKIT_POLICY_ENUMERATOR

/// Every policy id, in list order.
#define IBDKIT_POLICY_ID_ELEM(T) PolicyId::T,
inline constexpr std::array ALL_POLICIES{IBDKIT_BUFFER_POLICIES(IBDKIT_POLICY_ID_ELEM)};
#undef IBDKIT_POLICY_ID_ELEM

/// "plain", "zero-after-free", "barrier-only", "secure", "hardened".
std::string_view PolicyName(PolicyId id) noexcept;
/// Parses a policy name (case-sensitive); also accepts '_' for '-'. nullopt if unknown.
std::optional<PolicyId> ParsePolicy(std::string_view name) noexcept;
/// Every policy name in list order, joined by `separator`, the last one by `last_separator`:
/// "plain, zero-after-free, barrier-only, secure, hardened" — the choices a --policy help text and
/// an "unknown policy" error list. `mark_default` appends " (Core's)" to DefaultPolicy's name.
std::string PolicyNameList(std::string_view separator = ", ", std::string_view last_separator = ", ",
                           bool mark_default = false);

} // namespace ibdkit
