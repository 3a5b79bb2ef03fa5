// bench/counters.cpp — hardware counters (perf_event): instructions, cycles, branches and
// branch-misses around each timed sample, where the kernel and CPU allow them.
#include "runner.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ibdkit::bench {
namespace detail {
namespace {

const char* ErrnoHint(int e)
{
    switch (e) {
    case ENOENT: return "no such hardware event: this CPU or VM exposes no PMU";
    case EOPNOTSUPP: return "not supported by this kernel/CPU";
    case EACCES:
    case EPERM: return "not permitted: lower kernel.perf_event_paranoid or grant CAP_PERFMON";
    case ENOSYS: return "perf_event_open is not available (seccomp or old kernel)";
    default: return "unavailable";
    }
}

} // namespace

PerfCounters::PerfCounters()
{
    constexpr std::array<uint64_t, 4> configs{PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CPU_CYCLES,
                                              PERF_COUNT_HW_BRANCH_INSTRUCTIONS, PERF_COUNT_HW_BRANCH_MISSES};
    constexpr std::array<const char*, 4> names{"instructions", "cycles", "branches", "branch-misses"};
    for (std::size_t i = 0; i < configs.size(); ++i) {
        perf_event_attr attr;
        std::memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_HARDWARE;
        attr.config = configs[i];
        attr.disabled = i == 0 ? 1 : 0;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        attr.read_format = PERF_FORMAT_GROUP;
        const int fd = int(::syscall(SYS_perf_event_open, &attr, 0, -1, i == 0 ? -1 : m_fds[0], 0));
        if (fd < 0) {
            const int e = errno;
            m_why = Printf("perf_event_open(%s) failed: %s (%s)", names[i], std::strerror(e), ErrnoHint(e));
            Close();
            break;
        }
        m_fds[i] = fd;
    }
    if (m_fds[0] >= 0) m_ok = true;
    if (!m_ok) {
        std::ifstream f("/proc/sys/kernel/perf_event_paranoid");
        int paranoid = 0;
        if (f >> paranoid) m_why += Printf("; kernel.perf_event_paranoid=%d", paranoid);
    }
}

PerfCounters::~PerfCounters() { Close(); }

void PerfCounters::Start()
{
    ::ioctl(m_fds[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    ::ioctl(m_fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
}

std::optional<PerfCounters::Counts> PerfCounters::Stop()
{
    ::ioctl(m_fds[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
    uint64_t buf[1 + 4] = {};
    const ssize_t n = ::read(m_fds[0], buf, sizeof buf);
    if (n < ssize_t(sizeof(uint64_t) * 5) || buf[0] != 4) return std::nullopt;
    return Counts{buf[1], buf[2], buf[3], buf[4]};
}

void PerfCounters::Close()
{
    for (int& fd : m_fds) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    m_ok = false;
}

} // namespace detail

bool HardwareCountersAvailable(std::string* why)
{
    detail::PerfCounters pc;
    if (!pc.ok() && why) *why = pc.why();
    return pc.ok();
}

} // namespace ibdkit::bench
