// --json's result and failure objects (cli/json_output.h).
#include "json_output.h"

#include "exit_codes.h"

#include <cstdio>
#include <optional>
#include <string>

namespace ibdkit::cli {

namespace {

std::optional<nlohmann::json>& Held()
{
    static std::optional<nlohmann::json> held;
    return held;
}

std::string& Errors()
{
    static std::string errors;
    return errors;
}

/// Whether the deepest command parsed was given --json.
bool JsonGiven(const CLI::App& app)
{
    for (const CLI::App* sub : app.get_subcommands()) {
        if (JsonGiven(*sub)) return true;
    }
    const CLI::Option* json = app.get_option_no_throw("--json");
    return json && json->count() > 0;
}

} // namespace

void PrintJsonResult(nlohmann::json result)
{
    if (Held()) std::printf("%s\n", Held()->dump(2).c_str()); // a second result: the first as it was
    Held() = std::move(result);
}

void NoteJsonError(const std::string& message) { Errors() += (Errors().empty() ? "" : "\n") + message; }

void FinishJson(const CLI::App& app, int exit_code)
{
    std::optional<nlohmann::json> out = std::move(Held());
    Held().reset();
    if (exit_code != EXIT_OK && JsonGiven(app)) {
        if (!out || !out->is_object()) out = nlohmann::json::object();
        (*out)["error"] = Errors().empty() ? "failed" : Errors();
        (*out)["exit_code"] = exit_code;
    }
    if (out) std::printf("%s\n", out->dump(2).c_str());
    std::fflush(stdout);
}

} // namespace ibdkit::cli
