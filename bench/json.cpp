// bench/json.cpp — results (and the environment they were measured in) as JSON: `--json FILE`
// and DIR/results.json of `--report DIR`, read by scripts/bench_report.py.
#include "runner.h"

#include "memory/policy.h"

#include <fstream>

namespace ibdkit::bench::detail {
namespace {

std::string JsonEscape(const std::string& s)
{
    std::string out;
    for (char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                out += Printf("\\u%04x", c);
            } else {
                out += c;
            }
        }
    }
    return out;
}

std::string EnvJson(const Environment& e)
{
    std::string out = "{";
    const std::pair<const char*, const std::string*> fields[] = {
        {"date_utc", &e.date_utc}, {"cpu", &e.cpu},           {"cores", &e.cores},
        {"kernel", &e.kernel},     {"compiler", &e.compiler}, {"build_type", &e.build_type},
        {"flags", &e.flags},       {"commit", &e.commit},     {"command", &e.command},
        {"counters", &e.counters}, {"core_lib", &e.core_lib}};
    bool first = true;
    for (const auto& [k, v] : fields) {
        out += Printf("%s\"%s\": \"", first ? "" : ", ", k) + JsonEscape(*v) + "\"";
        first = false;
    }
    return out + "}";
}

} // namespace

void WriteJson(const std::string& path, const std::vector<Result>& results, const Environment* env)
{
    std::ofstream f(path);
    f.precision(10);
    f << "{\n";
    if (env) f << "  \"environment\": " << EnvJson(*env) << ",\n";
    // The buffer policies in list order, so scripts/bench_report.py draws a new one unedited.
    f << "  \"policies\": [";
    for (std::size_t i = 0; i < ALL_POLICIES.size(); ++i) f << (i ? ", \"" : "\"") << PolicyName(ALL_POLICIES[i]) << "\"";
    f << "],\n";
    f << "  \"benchmarks\": [\n";
    auto opt = [&f](const char* key, const std::optional<double>& v) {
        if (v) f << ", \"" << key << "\": " << *v;
    };
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        f << "    {\"name\": \"" << JsonEscape(r.name) << "\", \"group\": \"" << JsonEscape(r.group)
          << "\", \"variant\": \"" << JsonEscape(r.variant) << "\", \"unit\": \"" << JsonEscape(r.unit)
          << "\", \"units_per_op\": " << r.units_per_op << ", \"median_ns_per_unit\": " << r.median_ns_per_unit
          << ", \"err_pct\": " << r.err_pct << ", \"total_s\": " << r.total_s;
        opt("ratio_to_plain", r.ratio_to_plain);
        opt("ratio_min", r.ratio_lo);
        opt("ratio_max", r.ratio_hi);
        opt("ratio_to_core", r.ratio_to_core);
        opt("core_ratio_min", r.core_lo);
        opt("core_ratio_max", r.core_hi);
        opt("ins_per_unit", r.ins_per_unit);
        opt("cyc_per_unit", r.cyc_per_unit);
        opt("bra_per_unit", r.bra_per_unit);
        opt("miss_pct", r.miss_pct);
        opt("ir_per_unit", r.ir_per_unit);
        if (r.ir_iters) f << ", \"ir_iterations\": " << r.ir_iters;
        f << ", \"samples_ns_per_unit\": [";
        for (std::size_t j = 0; j < r.samples.size(); ++j) f << (j ? ", " : "") << r.samples[j];
        f << "]}" << (i + 1 < results.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
}

} // namespace ibdkit::bench::detail
