// The one list of buffer policies (IBDKIT_BUFFER_POLICIES) drives everything that iterates over
// policies: every listed policy round-trips through its name, VisitPolicy hands out the right type
// for its id, the benchmarks register a variant for it, the CLI's help texts offer it and the
// benchmark JSON lists it (for the chart).
#include "bench.h"

#include "memory/policy.h"
#include "stream/streams.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace ibdkit {
namespace {

#if defined(IBDKIT_LIBCXX_SUBSET)
// The libc++ build has no LevelDB (cmake/libcxx_subset.cmake): no chainstate or replay benchmarks,
// and its CLI has only `bench`.
constexpr bool FULL_BUILD = false;
#else
constexpr bool FULL_BUILD = true;
#endif

std::vector<PolicyId> IdsInTypeOrder()
{
    std::vector<PolicyId> ids;
    ForEachPolicy([&]<typename P>(P) { ids.push_back(P::id); });
    return ids;
}

TEST(PolicyList, TypesIdsAndNamesAgree)
{
    // The type list and the id list are the same list, in the same order.
    EXPECT_EQ(AllPolicyTypes::size, ALL_POLICIES.size());
    EXPECT_EQ(IdsInTypeOrder(), std::vector<PolicyId>(ALL_POLICIES.begin(), ALL_POLICIES.end()));
    std::set<std::string> names;
    ForEachPolicy([&]<typename P>(P) {
        SCOPED_TRACE(std::string(P::name));
        // Round trip through the name, also with '_' for '-'.
        EXPECT_EQ(PolicyName(P::id), P::name);
        EXPECT_EQ(ParsePolicy(P::name), P::id);
        std::string underscored(P::name);
        for (char& c : underscored) {
            if (c == '-') c = '_';
        }
        EXPECT_EQ(ParsePolicy(underscored), P::id);
        EXPECT_TRUE(names.insert(std::string(P::name)).second) << "duplicate name";
        // VisitPolicy maps the id back to exactly this type.
        const bool same = VisitPolicy(P::id, []<typename Q>(Q) { return std::is_same_v<Q, P>; });
        EXPECT_TRUE(same);
        // And the type is a usable stream policy.
        DataStream<P> s;
        s << uint32_t{0x01020304};
        EXPECT_EQ(s.size(), 4u);
    });
    EXPECT_EQ(names.size(), ALL_POLICIES.size());
    EXPECT_FALSE(ParsePolicy("all"));
    EXPECT_FALSE(ParsePolicy(""));
    EXPECT_EQ(PolicyName(DefaultPolicy::id), "zero-after-free"); // Core's choice
}

TEST(PolicyList, NameListNamesEveryPolicyInOrder)
{
    // Today's list, spelled out once (update it with the list; nothing else here needs an edit).
    if (ALL_POLICIES.size() == 5) {
        EXPECT_EQ(PolicyNameList(), "plain, zero-after-free, barrier-only, secure, hardened");
    }
    // Built from the policy types in list order, with the separators asked for.
    std::vector<std::string> names;
    ForEachPolicy([&]<typename P>(P) { names.emplace_back(P::name); });
    std::string commas, with_or, marked;
    for (std::size_t i = 0; i < names.size(); ++i) {
        const bool last = i + 1 == names.size();
        commas += (i ? ", " : "") + names[i];
        with_or += (i ? (last ? " or " : ", ") : "") + names[i];
        marked += (i ? ", " : "") + names[i] + (names[i] == DefaultPolicy::name ? " (Core's)" : "");
    }
    EXPECT_EQ(PolicyNameList(), commas);
    EXPECT_EQ(PolicyNameList(", ", " or "), with_or);
    EXPECT_EQ(PolicyNameList(", ", ", ", true), marked);
    EXPECT_NE(marked.find("zero-after-free (Core's)"), std::string::npos);
}

TEST(PolicyList, EveryPolicyHasItsBenchmarkVariants)
{
    // Each per-policy benchmark group registers exactly one variant per listed policy, in list order
    // (beside Core's engine where a group has it).
    std::vector<std::string> groups{"DataStreamAlloc", "DataStreamSerializeScript", "ProcessMessageBlock", "DeserializeBlockTest"};
    if (FULL_BUILD) groups.insert(groups.end(), {"CCoinsViewDBFlush", "UtxoStats", "ReplayDefaultChain"});
    for (const std::string& group : groups) {
        std::vector<std::string> variants;
        for (const auto& c : bench::Registry()) {
            if (c.group == group && c.variant.rfind("core", 0) != 0) variants.push_back(c.variant); // not Core's engine
        }
        std::vector<std::string> expected;
        for (PolicyId id : ALL_POLICIES) expected.emplace_back(PolicyName(id));
        EXPECT_EQ(variants, expected) << group;
    }
}

/// stdout+stderr of `ibdkit ARGS`.
std::string RunCli(const std::string& args, int* status)
{
    const std::string cmd = std::string(IBDKIT_CLI_PATH) + " " + args + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return {};
    std::string out;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    *status = ::pclose(p);
    return out;
}

TEST(PolicyList, CliHelpAndErrorsOfferEveryPolicy)
{
    if (::access(IBDKIT_CLI_PATH, X_OK) != 0) {
        const char* ci = std::getenv("CI");
        if (ci && std::string(ci) == "true") FAIL() << "CLI not built: build the `ibdkit` target (" << IBDKIT_CLI_PATH << ")";
        GTEST_SKIP() << "CLI not built: " << IBDKIT_CLI_PATH;
    }
    std::vector<const char*> commands{"bench --help", "bench --policy bogus --list"};
    if (FULL_BUILD) {
        commands.insert(commands.end(), {"--help", "replay --help", "sync --help", "utxo stats --help",
                                         "replay --policy bogus --blocks-dir /nonexistent",
                                         "sync --policy bogus --connect 127.0.0.1:1",
                                         "utxo stats --policy bogus --chainstate /nonexistent"});
    }
    for (const char* args : commands) {
        SCOPED_TRACE(args);
        int status = 0;
        const std::string out = RunCli(args, &status);
        for (PolicyId id : ALL_POLICIES) EXPECT_NE(out.find(PolicyName(id)), std::string::npos) << PolicyName(id) << " missing in:\n" << out;
        if (std::string(args).find("bogus") != std::string::npos) {
            EXPECT_NE(status, 0);
            EXPECT_NE(out.find("unknown policy 'bogus'"), std::string::npos) << out;
        }
    }
    // Results JSON lists the policies for scripts/bench_report.py.
    const std::string json = ::testing::TempDir() + "ibdkit_policy_list.json";
    int status = 0;
    RunCli("bench --smoke --filter '^DataStreamAlloc/plain$' --json " + json, &status);
    ASSERT_EQ(status, 0);
    FILE* f = std::fopen(json.c_str(), "r");
    ASSERT_NE(f, nullptr) << json;
    std::string text;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
    std::string expected = "\"policies\": [";
    for (std::size_t i = 0; i < ALL_POLICIES.size(); ++i) expected += (i ? ", \"" : "\"") + std::string(PolicyName(ALL_POLICIES[i])) + "\"";
    EXPECT_NE(text.find(expected + "]"), std::string::npos) << text;
}

} // namespace
} // namespace ibdkit
