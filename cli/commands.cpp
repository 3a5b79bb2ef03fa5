#include "commands.h"

namespace ibdkit::cli {

std::vector<CommandRegistration>& Commands()
{
    static std::vector<CommandRegistration> commands;
    return commands;
}

void RegisterCommands(CLI::App& app)
{
    for (auto& r : Commands()) r(app);
}

int& ExitCode()
{
    static int code = 0;
    return code;
}

} // namespace ibdkit::cli
