// ibdkit — command-line front end over the public API.
#include "commands.h"
#include "interrupt.h"
#include "json_output.h"

#include <ibdkit/memory/policy_id.h>

#include <CLI/CLI.hpp>

#include <exception>

int main(int argc, char** argv)
{
    using namespace ibdkit::cli;
    CLI::App app{"ibdkit — the initial-block-download data path of a Bitcoin node, byte-compatible with "
                 "Bitcoin Core, with the buffer-memory policy as a first-class choice.\n"
                 "Policies: " + ibdkit::PolicyNameList(", ", ", ", /*mark_default=*/true) + ".\n"
                 "Exit codes: 0 done, 1 failed, 2 invalid chain, 64 usage error, 130 interrupted (docs/cli.md)."};
    app.set_version_flag("--version", IBDKIT_VERSION);
    app.require_subcommand(1);
    RegisterCommands(app);
    InstallInterruptExit(); // a command that stops cleanly by itself installs its own
    int code = EXIT_OK;
    try {
        app.parse(argc, argv);
        code = ExitCode();
    } catch (const CLI::Success& e) {
        return app.exit(e); // --help, --version
    } catch (const CLI::RuntimeError& e) {
        // A command's own outcome (e.g. `utxo get` of a coin not in the set), already said, in its
        // JSON too (gettxout's null).
        FinishJson(app, EXIT_OK);
        return e.get_exit_code();
    } catch (const CLI::ParseError& e) {
        PrintError(UnknownCommand(app).value_or(e.what()));
        PrintNote("see ibdkit " + UsageCommand(app) + "--help");
        code = EXIT_USAGE;
    } catch (const UsageError& e) {
        PrintError(e.what());
        code = EXIT_USAGE;
    } catch (const std::exception& e) {
        PrintError(e.what());
        code = EXIT_FAILED;
    }
    if ((code == EXIT_FAILED || code == EXIT_INVALID_CHAIN) && !ErrorPrinted()) {
        PrintError(code == EXIT_INVALID_CHAIN ? "the input is invalid: the verdict above says why" : "failed: the output above says why");
    }
    FinishJson(app, code);
    return code;
}
