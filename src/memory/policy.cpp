#include <ibdkit/memory/policy.h>

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

} // namespace ibdkit
