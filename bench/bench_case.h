// bench/bench_case.h — what a benchmark file (bench/bench_*.cpp) uses beyond the harness's
// interface (bench.h): keeping a result observable, and one case per buffer policy. Private to the
// benchmarks: it includes the library's private policy list.
#pragma once

#include "bench.h"

#include "memory/policy.h"

#include <utility>

namespace ibdkit::bench {

/// Keeps a value (and memory reachable from it) alive and observable: the compiler must assume
/// it is read, so the work that produced it cannot be elided.
template <typename T>
inline void DoNotOptimize(const T& value)
{
    asm volatile("" : : "r,m"(value) : "memory");
}
inline void ClobberMemory() { asm volatile("" : : : "memory"); }

/// Registers make(P{}) for every buffer policy P, in the order of the policy list
/// (IBDKIT_BUFFER_POLICIES in ibdkit/memory/policy.h), so a new policy gets its variants with no
/// edit here. Example: RegisterPerPolicy([]<typename P>(P) { return AllocCase<P>(); });
template <typename MakeCase>
void RegisterPerPolicy(MakeCase&& make)
{
    ForEachPolicy([&](auto tag) { Registry().push_back(make(tag)); });
}

} // namespace ibdkit::bench
