#include "memory/locked_pool.h"

#include "memory/cleanse.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibdkit {

namespace {

std::size_t PageSize()
{
    static const std::size_t page = [] {
        long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? std::size_t(p) : std::size_t{4096};
    }();
    return page;
}

std::size_t RoundUp(std::size_t n, std::size_t align) { return (n + align - 1) / align * align; }

// mlock/munlock through the raw system calls: sanitizer runtimes intercept the libc wrappers and
// turn them into no-ops that report success, which would hide exactly the failure we report.
bool LockPages(void* p, std::size_t n) { return syscall(SYS_mlock, p, n) == 0; }
void UnlockPages(void* p, std::size_t n) { syscall(SYS_munlock, p, n); }

std::mutex g_hook_mutex;
LockedPool::LogHook g_hook;

void Warn(std::string_view msg)
{
    std::lock_guard lock(g_hook_mutex);
    if (g_hook) {
        g_hook(msg);
    } else {
        std::fprintf(stderr, "ibdkit: warning: %.*s\n", int(msg.size()), msg.data());
    }
}

// One mmap'd region carved into chunks. Free chunks are indexed three ways, as in Core's Arena:
// by size (best fit), by start and by end (coalescing with neighbours on free).
class Arena {
public:
    Arena(char* base, std::size_t size, bool locked, bool dedicated)
        : m_base(base), m_size(size), m_locked(locked), m_dedicated(dedicated)
    {
        AddFree(base, size);
    }

    char* base() const { return m_base; }
    std::size_t size() const { return m_size; }
    bool locked() const { return m_locked; }
    bool dedicated() const { return m_dedicated; }
    bool owns(const void* p) const
    {
        auto c = static_cast<const char*>(p);
        return c >= m_base && c < m_base + m_size;
    }
    bool empty() const { return m_used.empty(); }

    void* alloc(std::size_t size)
    {
        auto it = m_by_size.lower_bound(size); // best fit: the smallest free chunk that fits
        if (it == m_by_size.end()) return nullptr;
        char* chunk = it->second;
        std::size_t chunk_size = it->first;
        RemoveFree(it);
        if (chunk_size > size) AddFree(chunk + size, chunk_size - size);
        m_used.emplace(chunk, size);
        return chunk;
    }

    // Returns false if p is not a live chunk of this arena.
    bool free(void* p)
    {
        auto used = m_used.find(static_cast<char*>(p));
        if (used == m_used.end()) return false;
        char* begin = used->first;
        std::size_t size = used->second;
        m_used.erase(used);
        Cleanse(begin, size);
        // Coalesce with the free chunk that ends where this one begins, and the one that starts
        // where this one ends.
        if (auto prev = m_by_end.find(begin); prev != m_by_end.end()) {
            char* prev_begin = prev->second->second;
            std::size_t prev_size = prev->second->first;
            RemoveFree(prev->second);
            begin = prev_begin;
            size += prev_size;
        }
        if (auto next = m_by_begin.find(begin + size); next != m_by_begin.end()) {
            size += next->second->first;
            RemoveFree(next->second);
        }
        AddFree(begin, size);
        return true;
    }

    void account(LockedPoolStats& s) const
    {
        for (const auto& [p, n] : m_used) s.used += n;
        for (const auto& [n, p] : m_by_size) s.free += n;
        s.chunks_used += m_used.size();
        s.chunks_free += m_by_size.size();
        s.total += m_size;
        if (m_locked) s.locked += m_size;
        ++s.arenas;
        if (!m_locked) ++s.lock_failures;
    }

private:
    using SizeMap = std::multimap<std::size_t, char*>;

    void AddFree(char* begin, std::size_t size)
    {
        auto it = m_by_size.emplace(size, begin);
        m_by_begin.emplace(begin, it);
        m_by_end.emplace(begin + size, it);
    }
    void RemoveFree(SizeMap::iterator it)
    {
        m_by_begin.erase(it->second);
        m_by_end.erase(it->second + it->first);
        m_by_size.erase(it);
    }

    char* m_base;
    std::size_t m_size;
    bool m_locked;
    bool m_dedicated;
    SizeMap m_by_size;
    std::unordered_map<char*, SizeMap::iterator> m_by_begin;
    std::unordered_map<char*, SizeMap::iterator> m_by_end;
    std::unordered_map<char*, std::size_t> m_used;
};

} // namespace

struct LockedPool::Impl {
    mutable std::mutex mutex;
    std::vector<std::unique_ptr<Arena>> arenas;
    bool warned{false};

    Arena* NewArena(std::size_t size, bool dedicated)
    {
        size = RoundUp(size, PageSize());
        void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return nullptr;
#ifdef MADV_DONTDUMP
        madvise(p, size, MADV_DONTDUMP); // keep secrets out of core dumps; best effort
#endif
        bool locked = LockPages(p, size);
        if (!locked && !warned) {
            warned = true;
            int err = errno;
            Warn(std::string("could not lock ") + std::to_string(size) +
                 " bytes of secure memory (mlock: " + std::strerror(err) +
                 "); continuing with unlocked memory, which may be swapped to disk. Raise "
                 "RLIMIT_MEMLOCK (ulimit -l) or grant CAP_IPC_LOCK to lock it.");
        }
        arenas.push_back(std::make_unique<Arena>(static_cast<char*>(p), size, locked, dedicated));
        return arenas.back().get();
    }

    void ReleaseArena(std::size_t index)
    {
        Arena& a = *arenas[index];
        if (a.locked()) UnlockPages(a.base(), a.size());
        munmap(a.base(), a.size());
        arenas.erase(arenas.begin() + std::ptrdiff_t(index));
    }
};

LockedPool::LockedPool() : m_impl(std::make_unique<Impl>()) {}

LockedPool::~LockedPool()
{
    while (!m_impl->arenas.empty()) m_impl->ReleaseArena(m_impl->arenas.size() - 1);
}

void* LockedPool::alloc(std::size_t size)
{
    if (size == 0) return nullptr;
    size = RoundUp(size, ARENA_ALIGN);
    std::lock_guard lock(m_impl->mutex);
    if (size > ARENA_SIZE) {
        Arena* a = m_impl->NewArena(size, /*dedicated=*/true);
        return a ? a->alloc(size) : nullptr;
    }
    for (auto& a : m_impl->arenas) {
        if (a->dedicated()) continue;
        if (void* p = a->alloc(size)) return p;
    }
    Arena* a = m_impl->NewArena(ARENA_SIZE, /*dedicated=*/false);
    return a ? a->alloc(size) : nullptr;
}

void LockedPool::free(void* p) noexcept
{
    if (p == nullptr) return;
    std::lock_guard lock(m_impl->mutex);
    for (std::size_t i = 0; i < m_impl->arenas.size(); ++i) {
        Arena& a = *m_impl->arenas[i];
        if (!a.owns(p)) continue;
        if (!a.free(p)) break;
        if (a.dedicated() && a.empty()) m_impl->ReleaseArena(i);
        return;
    }
    std::fprintf(stderr, "ibdkit: LockedPool::free of a pointer it does not own\n");
    std::abort();
}

LockedPoolStats LockedPool::stats() const
{
    std::lock_guard lock(m_impl->mutex);
    LockedPoolStats s;
    for (const auto& a : m_impl->arenas) a->account(s);
    return s;
}

LockedPool& LockedPool::Instance()
{
    // Deliberately leaked: secure buffers may be freed by static destructors after main returns.
    static LockedPool* pool = new LockedPool();
    return *pool;
}

void LockedPool::SetLogHook(LogHook hook)
{
    std::lock_guard lock(g_hook_mutex);
    g_hook = std::move(hook);
}

} // namespace ibdkit
