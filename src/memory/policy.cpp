#include "memory/policy.h"

#include <string>

namespace ibdkit {

std::string_view PolicyName(PolicyId id) noexcept
{
    return VisitPolicy(id, []<typename P>(P) { return P::name; });
}

std::optional<PolicyId> ParsePolicy(std::string_view name) noexcept
{
    std::string n(name);
    for (char& c : n) {
        if (c == '_') c = '-';
    }
    for (PolicyId id : ALL_POLICIES) {
        if (PolicyName(id) == n) return id;
    }
    return std::nullopt;
}

std::string PolicyNameList(std::string_view separator, std::string_view last_separator, bool mark_default)
{
    std::string out;
    for (std::size_t i = 0; i < ALL_POLICIES.size(); ++i) {
        if (i) out += i + 1 == ALL_POLICIES.size() ? last_separator : separator;
        out += PolicyName(ALL_POLICIES[i]);
        if (mark_default && ALL_POLICIES[i] == DefaultPolicy::id) out += " (Core's)";
    }
    return out;
}

} // namespace ibdkit
