// src/common/seconds_text.h — a duration as the messages of the P2P code print it.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace ibdkit {

/// "2 s", "0.7 s", "30 s": seconds with no trailing zeros (the timeouts and stall windows users
/// give and read back in the messages that name them).
inline std::string SecondsText(std::chrono::milliseconds d)
{
    char b[32];
    std::snprintf(b, sizeof b, "%g s", double(d.count()) / 1000.0);
    return b;
}

} // namespace ibdkit
