// src/common/cpu_features.h (internal) — the switch that turns every CPU-specific fast path off.
//
// IBDKIT_DISABLE_CPU_FEATURES=1 in the environment makes the run-time checks (x86: CPUID; aarch64:
// getauxval(AT_HWCAP)) report no feature, so SHA-256 and CRC-32C take the portable code on any
// CPU: a check of the fallback on hardware (or an emulated CPU) that has the extensions. Read once
// per process, at the first hash or checksum.
#pragma once

#include <cstdlib>
#include <cstring>

namespace ibdkit {

inline bool CpuFeaturesDisabled() noexcept
{
    const char* v = std::getenv("IBDKIT_DISABLE_CPU_FEATURES");
    return v && *v && std::strcmp(v, "0") != 0;
}

} // namespace ibdkit
