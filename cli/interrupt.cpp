// SIGINT/SIGTERM handling of the CLI (interrupt.h). The handler uses only async-signal-safe calls:
// unlink(2) through AbandonAtomicFilesFromSignal, write(2) and _exit(2).
#include "interrupt.h"

#include <ibdkit/common/atomic_file.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

namespace ibdkit::cli {
namespace {

constexpr const char* PREFIX = "ibdkit: interrupted:";

std::atomic<std::atomic<bool>*> g_flag{nullptr};
std::atomic<bool> g_tty{false};
char g_note[2048];

void Write(const char* s) noexcept
{
    std::size_t n = std::strlen(s);
    while (n > 0) {
        const ssize_t w = ::write(STDERR_FILENO, s, n);
        if (w <= 0) return;
        s += w;
        n -= std::size_t(w);
    }
}

[[noreturn]] void ExitInterrupted() noexcept
{
    if (g_tty.load()) Write("\n"); // below a progress line
    const int files = AbandonAtomicFilesFromSignal(STDERR_FILENO, PREFIX);
    if (g_note[0]) {
        Write(PREFIX);
        Write(" ");
        Write(g_note);
        Write("\n");
    } else if (files == 0) {
        Write(PREFIX);
        Write(" nothing written\n");
    }
    ::_exit(EXIT_INTERRUPTED);
}

extern "C" void OnInterrupt(int)
{
    std::atomic<bool>* flag = g_flag.load();
    if (flag && !flag->exchange(true)) return; // the command stops at its next step and says so itself
    ExitInterrupted();
}

void Install()
{
    g_tty.store(::isatty(STDERR_FILENO) == 1);
    struct sigaction sa {};
    sa.sa_handler = OnInterrupt;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
}

} // namespace

void InstallInterruptExit()
{
    g_flag.store(nullptr);
    Install();
}

void SetInterruptNote(std::string_view note)
{
    const std::size_t n = std::min(note.size(), sizeof g_note - 1);
    g_note[0] = '\0'; // a signal meanwhile prints no half-copied note
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (n > 1) std::memcpy(g_note + 1, note.data() + 1, n - 1);
    g_note[n] = '\0';
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (n > 0) g_note[0] = note[0];
}

void InstallInterruptFlag(std::atomic<bool>* flag)
{
    g_flag.store(flag);
    Install();
}

} // namespace ibdkit::cli
