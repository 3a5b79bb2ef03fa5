// bench/util.cpp — number formatting, strings and shell helpers shared by the runner's files.
#include "runner.h"

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <filesystem>

namespace ibdkit::bench::detail {

std::string Group3(double v, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    std::string s(buf);
    auto dot = s.find('.');
    std::string ip = s.substr(0, dot == std::string::npos ? s.size() : dot);
    std::string frac = dot == std::string::npos ? "" : s.substr(dot);
    std::string out;
    for (std::size_t i = 0; i < ip.size(); ++i) {
        if (i && (ip.size() - i) % 3 == 0 && ip[i - 1] != '-') out += ',';
        out += ip[i];
    }
    return out + frac;
}

std::string Fmt(double v) { return v >= 1 ? Group3(v, 2) : Group3(v, 4); }

std::string Printf(const char* fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

std::string Trim(std::string s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
}

std::optional<std::string> Capture(const std::string& cmd)
{
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return std::nullopt;
    std::string out;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int rc = ::pclose(p);
    if (rc != 0) return std::nullopt;
    return Trim(out);
}

std::string ShellQuote(const std::string& s)
{
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string SelfExe()
{
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : p.string();
}

Result ResultOf(const Case& c)
{
    Result r;
    r.name = c.name();
    r.group = c.group;
    r.variant = c.variant;
    r.unit = c.unit;
    r.units_per_op = c.units_per_op;
    return r;
}

} // namespace ibdkit::bench::detail
