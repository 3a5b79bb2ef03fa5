// bench/callgrind.cpp — instruction counts: `--callgrind` re-executes this binary under valgrind
// --tool=callgrind once per case, and the child (`--iterations N`) runs the case N times inside the
// one function collection is switched on for.
#include "runner.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

/// The loop callgrind counts (`--toggle-collect=ibdkit_bench_callgrind_loop`): collection is on
/// exactly while this function runs. extern "C" and noinline so the symbol has this plain name.
extern "C" __attribute__((noinline)) void ibdkit_bench_callgrind_loop(const ibdkit::bench::Op* op, uint64_t iters)
{
    for (uint64_t i = 0; i < iters; ++i) (*op)();
    asm volatile("" : : : "memory");
}

namespace ibdkit::bench::detail {
namespace {

namespace fs = std::filesystem;

std::string RegexEscape(const std::string& s)
{
    std::string out;
    for (char c : s) {
        if (std::strchr("\\^$.|?*+()[]{}", c)) out += '\\';
        out += c;
    }
    return out;
}

std::optional<std::string> FindInPath(const std::string& prog)
{
    const char* path = std::getenv("PATH");
    std::stringstream ss(path ? path : "/usr/bin:/bin");
    std::string dir;
    while (std::getline(ss, dir, ':')) {
        const std::string p = (dir.empty() ? "." : dir) + "/" + prog;
        if (::access(p.c_str(), X_OK) == 0) return p;
    }
    return std::nullopt;
}

/// Runs argv with stdout+stderr to log_path; returns the exit status (-1 if it could not run).
int Spawn(const std::vector<std::string>& argv, const std::string& log_path)
{
    const pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::close(fd);
        }
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string Tail(const std::string& path, std::size_t lines)
{
    std::ifstream f(path);
    std::vector<std::string> all;
    std::string l;
    while (std::getline(f, l)) all.push_back(l);
    std::string out;
    for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "    " + all[i] + "\n";
    return out;
}

/// Total Ir from a callgrind output file ("totals:" or "summary:" line), or nullopt.
std::optional<uint64_t> ParseCallgrindTotal(const std::string& path)
{
    std::ifstream f(path);
    std::string line;
    std::optional<uint64_t> summary, totals;
    while (std::getline(f, line)) {
        if (line.rfind("totals:", 0) == 0) totals = std::strtoull(line.c_str() + 7, nullptr, 10);
        if (line.rfind("summary:", 0) == 0) summary = std::strtoull(line.c_str() + 8, nullptr, 10);
    }
    return totals ? totals : summary;
}

/// Instructions (Ir) of `iters` iterations of case `name`, counted by callgrind in a child
/// `exe bench --filter ^name$ --iterations iters`.
std::optional<uint64_t> CallgrindCount(const std::string& valgrind, const std::string& exe, const std::string& name,
                                       uint64_t iters, std::string* why)
{
    std::string tmpl = (fs::temp_directory_path() / "ibdkit-callgrind-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
        *why = "cannot create a temporary directory";
        return std::nullopt;
    }
    const fs::path dir = tmpl;
    const std::string out = (dir / "callgrind.out").string();
    const std::string log = (dir / "log.txt").string();
    const std::vector<std::string> argv{valgrind,
                                        "--tool=callgrind",
                                        "--callgrind-out-file=" + out,
                                        "--collect-atstart=no",
                                        "--toggle-collect=ibdkit_bench_callgrind_loop",
                                        "--error-exitcode=0",
                                        exe,
                                        "bench",
                                        "--filter",
                                        "^" + RegexEscape(name) + "$",
                                        "--policy",
                                        "all",
                                        "--iterations",
                                        std::to_string(iters)};
    const int rc = Spawn(argv, log);
    std::optional<uint64_t> total;
    if (rc != 0) {
        *why = Printf("valgrind exited with %d:\n", rc) + Tail(log, 8);
    } else if (!(total = ParseCallgrindTotal(out))) {
        *why = "no totals in callgrind output:\n" + Tail(log, 8);
    } else if (*total == 0) {
        // The child skipped the case (data missing, CPU lacks the instructions …): say why.
        std::ifstream f(log);
        std::string line;
        const std::string prefix = name + ": skipped: ";
        *why = "callgrind counted nothing:\n" + Tail(log, 8);
        while (std::getline(f, line)) {
            if (line.rfind(prefix, 0) == 0) *why = line.substr(name.size() + 2);
        }
        total.reset();
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return total;
}

} // namespace

std::optional<std::vector<Result>> RunCallgrind(const Selection& sel, const Options& opts, std::vector<std::string>* skipped)
{
    std::vector<Result> all;
    auto valgrind = FindInPath("valgrind");
    const std::string exe = opts.exe.empty() ? SelfExe() : opts.exe;
    if (!valgrind) {
        std::printf("callgrind: valgrind not found in PATH (apt-get install valgrind); nothing measured\n");
        return std::nullopt;
    }
    const uint64_t iters = std::max<uint64_t>(1, opts.callgrind_iters);
    std::printf("callgrind: instructions (Ir) counted inside the timed loop only, %llu iterations per case after "
                "one warm-up;\nvalgrind's virtual CPU has no SHA-NI/AVX-512, so hashing takes the AVX2/portable "
                "paths here.\n",
                static_cast<unsigned long long>(iters));
    for (const auto& g : sel.order) {
        std::vector<Result> rows;
        for (const Case* c : sel.groups.at(g)) {
            std::fprintf(stderr, "bench: callgrind %s ...\n", c->name().c_str());
            std::string why;
            auto total = CallgrindCount(*valgrind, exe, c->name(), iters, &why);
            if (!total) {
                skipped->push_back(c->name() + ": " + why);
                continue;
            }
            Result r = ResultOf(*c);
            r.ir_iters = iters;
            r.ir_per_unit = double(*total) / double(iters) / c->units_per_op;
            rows.push_back(std::move(r));
        }
        auto plain = std::find_if(rows.begin(), rows.end(), [](const Result& r) { return r.variant == "plain"; });
        if (plain != rows.end()) {
            const double base = *plain->ir_per_unit;
            for (auto& r : rows) {
                r.ratio_to_plain = r.ratio_lo = r.ratio_hi = *r.ir_per_unit / base;
            }
        }
        auto core = std::find_if(rows.begin(), rows.end(), [](const Result& r) { return IsCoreVariant(r.variant); });
        if (core != rows.end()) {
            const double base = *core->ir_per_unit;
            for (auto& r : rows) r.ratio_to_core = r.core_lo = r.core_hi = *r.ir_per_unit / base;
        }
        if (rows.empty()) continue;
        std::vector<const Result*> ptrs;
        for (const auto& r : rows) ptrs.push_back(&r);
        PrintGroup(ptrs);
        all.insert(all.end(), rows.begin(), rows.end());
    }
    return all;
}

std::vector<Result> RunFixedIterations(const Selection& sel, const Options& opts, std::vector<std::string>* skipped)
{
    std::vector<Result> all;
    for (const auto& g : sel.order) {
        for (const Case* c : sel.groups.at(g)) {
            std::string why;
            Op op = c->setup(&why);
            if (!op) {
                std::printf("%s: skipped: %s\n", c->name().c_str(), why.c_str());
                skipped->push_back(c->name() + ": " + why);
                continue;
            }
            op(); // warm-up, not counted
            ibdkit_bench_callgrind_loop(&op, opts.fixed_iters);
            std::printf("%s: %llu iterations\n", c->name().c_str(), static_cast<unsigned long long>(opts.fixed_iters));
            Result r = ResultOf(*c);
            r.ir_iters = opts.fixed_iters;
            all.push_back(std::move(r));
        }
    }
    return all;
}

} // namespace ibdkit::bench::detail
