// ibdkit — command-line front end over the public API.
#include "commands.h"
#include "interrupt.h"

#include <ibdkit/memory/policy.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv)
{
    CLI::App app{"ibdkit — the initial-block-download data path of a Bitcoin node, byte-compatible with "
                 "Bitcoin Core, with the buffer-memory policy as a first-class choice.\n"
                 "Policies: " + ibdkit::PolicyNameList(", ", ", ", /*mark_default=*/true) + "."};
    app.set_version_flag("--version", IBDKIT_VERSION);
    app.require_subcommand(1);
    ibdkit::cli::RegisterCommands(app);
    ibdkit::cli::InstallInterruptExit(); // a command that stops cleanly by itself installs its own
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ibdkit: error: %s\n", e.what());
        return 1;
    }
    return ibdkit::cli::ExitCode();
}
