// bench/environment.cpp — the machine and build a result describes (CPU, kernel, compiler, flags,
// commit, command line, counters) and where Bitcoin Core's libbitcoinkernel.so is.
#include "runner.h"

#include <sys/utsname.h>

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#ifndef IBDKIT_SOURCE_DIR
#define IBDKIT_SOURCE_DIR "."
#endif

namespace ibdkit::bench {
namespace {

namespace fs = std::filesystem;
using namespace detail;

std::string CpuModel()
{
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto colon = line.find(':');
            if (colon != std::string::npos) return Trim(line.substr(colon + 1));
        }
    }
    return "unknown";
}

std::string CpuFlagsOfInterest()
{
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        // x86 lists "flags", 64-bit ARM "Features": the instructions ibdkit's hashing and block
        // checksums pick at run time (SHA-NI / AVX2 / AVX-512, SSE 4.2 and ARMv8 CRC32 for CRC-32C).
        if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) {
            const std::string words = line + " ";
            std::string out;
            for (const char* flag : {"sse4_2", "sha_ni", "avx2", "avx512f", "crc32", "sha2"}) {
                if (words.find(std::string(" ") + flag + " ") != std::string::npos) out += std::string(out.empty() ? "" : ", ") + flag;
            }
            return out;
        }
    }
    return {};
}

std::map<std::string, std::string> CMakeCache()
{
    std::map<std::string, std::string> out;
    const std::string exe = SelfExe();
    if (exe.empty()) return out;
    std::ifstream f(fs::path(exe).parent_path() / "CMakeCache.txt");
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#' || line[0] == '/') continue;
        auto colon = line.find(':');
        auto eq = line.find('=');
        if (colon == std::string::npos || eq == std::string::npos || colon > eq) continue;
        out[line.substr(0, colon)] = line.substr(eq + 1);
    }
    return out;
}

std::string CommandLine()
{
    std::ifstream f("/proc/self/cmdline", std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::string out;
    std::size_t start = 0;
    bool first = true;
    while (start < all.size()) {
        const std::size_t end = all.find('\0', start);
        std::string arg = all.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (first) arg = fs::path(arg).filename().string();
        const bool plain = !arg.empty() && arg.find_first_of(" \t'\"|*()[]{}$\\^?") == std::string::npos;
        out += (first ? "" : " ") + (plain ? arg : ShellQuote(arg));
        first = false;
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return out;
}

} // namespace

std::optional<std::string> FindKernelLib(const std::string& explicit_path, std::string* why)
{
    std::error_code ec;
    if (!explicit_path.empty()) {
        if (fs::is_regular_file(explicit_path, ec)) return fs::absolute(explicit_path).string();
        if (why) *why = "--kernel-lib " + explicit_path + " does not exist";
        return std::nullopt;
    }
    if (const char* env = std::getenv("IBDKIT_KERNEL_LIB"); env && *env) {
        if (fs::is_regular_file(env, ec)) return std::string(env);
        if (why) *why = std::string("$IBDKIT_KERNEL_LIB=") + env + " does not exist";
        return std::nullopt;
    }
    std::vector<std::string> pythons{"python3"};
    const fs::path venv = fs::path(IBDKIT_SOURCE_DIR) / "build" / "venv" / "bin" / "python";
    if (fs::exists(venv, ec)) pythons.push_back(venv.string());
    for (const auto& py : pythons) {
        auto dir = Capture(py + " -c \"import pbk,os;print(os.path.dirname(pbk.__file__))\" 2>/dev/null");
        if (!dir || dir->empty()) continue;
        const fs::path lib = fs::path(*dir) / "_libs" / "libbitcoinkernel.so";
        if (fs::is_regular_file(lib, ec)) return lib.string();
    }
    if (why) {
        *why = "libbitcoinkernel.so not found (searched --kernel-lib, $IBDKIT_KERNEL_LIB, the pbk package of python3 "
               "and build/venv; pip install py-bitcoinkernel or pass --kernel-lib PATH)";
    }
    return std::nullopt;
}

Environment DescribeEnvironment(const Options& opts)
{
    Environment e;
    char buf[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    e.date_utc = buf;
    e.cpu = CpuModel();
    const std::string flags = CpuFlagsOfInterest();
    if (!flags.empty()) e.cpu += " (" + flags + ")";
    e.cores = std::to_string(std::thread::hardware_concurrency());
    utsname u;
    if (::uname(&u) == 0) e.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
#if defined(__clang__)
    e.compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    e.compiler = std::string("GCC ") + __VERSION__;
#else
    e.compiler = "unknown";
#endif
    const auto cache = CMakeCache();
    auto get = [&cache](const std::string& k) {
        auto it = cache.find(k);
        return it == cache.end() ? std::string() : it->second;
    };
    e.build_type = get("CMAKE_BUILD_TYPE");
    std::string upper = e.build_type;
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    e.flags = Trim(get("CMAKE_CXX_FLAGS") + " " + (upper.empty() ? "" : get("CMAKE_CXX_FLAGS_" + upper)));
    if (cache.empty()) {
#if defined(__OPTIMIZE__)
        e.flags = "optimized (CMakeCache.txt not found beside the binary)";
#else
        e.flags = "not optimized (CMakeCache.txt not found beside the binary)";
#endif
    }
    const std::string src = ShellQuote(IBDKIT_SOURCE_DIR);
    if (auto c = Capture("git -C " + src + " rev-parse --short=12 HEAD 2>/dev/null")) {
        e.commit = *c;
        auto dirty = Capture("git -C " + src + " status --porcelain --untracked-files=no 2>/dev/null");
        if (dirty && !dirty->empty()) e.commit += " (+ uncommitted changes)";
    } else {
        e.commit = "unknown (not a git checkout)";
    }
    e.command = CommandLine();
    std::string why;
    e.counters = HardwareCountersAvailable(&why) ? "perf_event: instructions, cycles, branches, branch-misses (user space)"
                                                 : "unavailable: " + why;
    std::string kwhy;
    auto lib = FindKernelLib(opts.kernel_lib, &kwhy);
    e.core_lib = lib ? *lib : "none: " + kwhy;
    return e;
}

} // namespace ibdkit::bench
