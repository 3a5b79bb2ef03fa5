// src/common/external_sort.h (internal) — an external merge sort of byte records in bounded memory,
// with optional aggregation of equal keys.
//
// Records are byte strings (at most `max_record` bytes each) ordered by a caller's `Less` over
// spans. A `Less` may also have `uint64_t Prefix(std::span<const uint8_t> rec) const`, a number
// in the same order as the records (Prefix(a) < Prefix(b) implies a < b; a < b implies Prefix(a) <=
// Prefix(b)), e.g. a key's first eight bytes read big-endian: the buffer is then sorted on those
// numbers, kept beside each record's place, and `Less` runs only on ties, so that sorting does not
// chase every comparison into the records. They collect in one buffer of `memory_bytes`; when it
// is full they are sorted, records
// with equal keys are folded into one by `Combine` (in place: the accumulated record keeps its
// length), and the result is written to a run file. Finish() merges the runs (at most `fan_in` at
// a time, in several passes if there are more), folding equal keys across runs too, and hands the
// records to the caller in order. Input that fits the buffer never touches the disk.
//
// Run files are created in `tmp_dir` and unlinked at once: only their descriptors name them, so
// they disappear when the sorter is destroyed, on success, on error or if the process dies.
// A run file is `u32 LE length | bytes` per record. Every read length is checked against the
// longest record added, and each run's record count and byte size against what was written: a
// truncated or altered run is Errc::Corrupt, never an allocation sized by what the file says.
#pragma once

#include <ibdkit/error.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace ibdkit {

struct ExternalSortOptions {
    std::filesystem::path tmp_dir;          ///< where run files live (must exist); empty: the system's
    std::size_t memory_bytes{64u << 20};    ///< the buffer of records and their index; the merge's read buffers
    std::size_t fan_in{64};                 ///< runs merged at once (open descriptors)
};

/// `Combine` for a sort that keeps records with equal keys apart (each one is handed on).
struct NoCombine {
    void operator()(std::span<uint8_t>, std::span<const uint8_t>) const noexcept {}
};

namespace external_sort_detail {

inline Error IoError(const std::string& what, int err)
{
    return Error{Errc::Corrupt, what + ": " + std::generic_category().message(err)};
}

/// One run file: an unlinked temporary file, its size and record count once written.
struct Run {
    int fd{-1};
    uint64_t bytes{0};
    uint64_t records{0};
    Run() = default;
    Run(Run&& o) noexcept : fd(std::exchange(o.fd, -1)), bytes(o.bytes), records(o.records) {}
    Run& operator=(Run&& o) noexcept
    {
        std::swap(fd, o.fd);
        bytes = o.bytes;
        records = o.records;
        return *this;
    }
    ~Run()
    {
        if (fd >= 0) ::close(fd);
    }
};

inline Result<Run> CreateRun(const std::filesystem::path& dir)
{
    std::error_code ec;
    const std::filesystem::path base = dir.empty() ? std::filesystem::temp_directory_path(ec) : dir;
    if (ec) return IoError("temporary directory", ec.value());
    std::string name = (base / "ibdkit-sort-XXXXXX").string();
    Run run;
    run.fd = ::mkstemp(name.data());
    if (run.fd < 0) return IoError("creating a run file in " + base.string(), errno);
    ::unlink(name.c_str());
    return run;
}

/// Appends records to a run through a buffer.
class RunWriter {
public:
    explicit RunWriter(Run& run) : m_run(run), m_buf(BUFFER) {}
    bool Put(std::span<const uint8_t> rec)
    {
        if (m_used + 4 + rec.size() > m_buf.size() && !Drain()) return false;
        const uint32_t len = uint32_t(rec.size());
        const uint8_t le[4] = {uint8_t(len), uint8_t(len >> 8), uint8_t(len >> 16), uint8_t(len >> 24)};
        Append(le);
        Append(rec);
        ++m_run.records;
        return true;
    }
    std::optional<Error> Finish()
    {
        if (!Drain()) return IoError("writing a run file", m_errno);
        return std::nullopt;
    }

private:
    static constexpr std::size_t BUFFER = 256 * 1024;
    void Append(std::span<const uint8_t> b)
    {
        if (m_used + b.size() > m_buf.size()) {
            // A record longer than the buffer goes straight to the file.
            if (!Drain() || !WriteAll(b)) return;
            return;
        }
        if (!b.empty()) std::memcpy(m_buf.data() + m_used, b.data(), b.size());
        m_used += b.size();
    }
    bool Drain()
    {
        const bool ok = WriteAll({m_buf.data(), m_used});
        m_used = 0;
        return ok;
    }
    bool WriteAll(std::span<const uint8_t> b)
    {
        if (m_errno) return false;
        for (std::size_t off = 0; off < b.size();) {
            const ssize_t n = ::write(m_run.fd, b.data() + off, b.size() - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                m_errno = n < 0 ? errno : ENOSPC;
                return false;
            }
            off += std::size_t(n);
        }
        m_run.bytes += b.size();
        return true;
    }
    Run& m_run;
    std::vector<uint8_t> m_buf;
    std::size_t m_used{0};
    int m_errno{0};
};

/// Reads a run's records back in order; the current one stays in Record() until the next Next().
class RunReader {
public:
    RunReader(const Run& run, std::size_t max_record, std::size_t buffer)
        : m_run(run), m_max(max_record), m_buf(std::max<std::size_t>(buffer, 4096)), m_rec(max_record)
    {
    }
    std::optional<Error> Start()
    {
        if (::lseek(m_run.fd, 0, SEEK_SET) != 0) return IoError("rewinding a run file", errno);
        return std::nullopt;
    }
    /// True with a record in Record(), false at the end of the run; Errc::Corrupt for a truncated
    /// or altered run.
    Result<bool> Next()
    {
        uint8_t le[4];
        auto got = Read(le, 4);
        if (!got) return got.error();
        if (*got == 0) {
            if (m_seen != m_run.records || m_read != m_run.bytes) return Corrupt("ends early");
            return false;
        }
        if (*got < 4) return Corrupt("ends inside a record's length");
        const std::size_t len = std::size_t(le[0]) | std::size_t(le[1]) << 8 | std::size_t(le[2]) << 16 |
                                std::size_t(le[3]) << 24;
        if (len > m_max) return Corrupt("holds a record longer than any written");
        got = Read(m_rec.data(), len);
        if (!got) return got.error();
        if (*got < len) return Corrupt("ends inside a record");
        m_len = len;
        if (++m_seen > m_run.records) return Corrupt("holds more records than written");
        return true;
    }
    std::span<const uint8_t> Record() const noexcept { return {m_rec.data(), m_len}; }

private:
    Error Corrupt(const char* what) const { return Error{Errc::Corrupt, std::string("a sort run file ") + what}; }
    /// Up to n bytes (fewer only at the end of the file).
    Result<std::size_t> Read(uint8_t* out, std::size_t n)
    {
        std::size_t done = 0;
        while (done < n) {
            if (m_pos == m_end) {
                const ssize_t r = ::read(m_run.fd, m_buf.data(), m_buf.size());
                if (r < 0 && errno == EINTR) continue;
                if (r < 0) return IoError("reading a run file", errno);
                if (r == 0) break;
                m_pos = 0;
                m_end = std::size_t(r);
            }
            const std::size_t take = std::min(n - done, m_end - m_pos);
            std::memcpy(out + done, m_buf.data() + m_pos, take);
            m_pos += take;
            done += take;
        }
        m_read += done;
        return done;
    }
    const Run& m_run;
    std::size_t m_max;
    std::vector<uint8_t> m_buf;
    std::size_t m_pos{0}, m_end{0};
    std::vector<uint8_t> m_rec;
    std::size_t m_len{0};
    uint64_t m_seen{0};
    uint64_t m_read{0};
};

} // namespace external_sort_detail

template <typename Less, typename Combine = NoCombine>
class ExternalSorter {
public:
    static constexpr bool COMBINES = !std::is_same_v<Combine, NoCombine>;

    ExternalSorter(ExternalSortOptions options, std::size_t max_record, Less less = {}, Combine combine = {})
        : m_opt(std::move(options)), m_max_record(max_record), m_less(std::move(less)), m_combine(std::move(combine))
    {
        assert(max_record < (uint64_t{1} << 32));
        m_opt.fan_in = std::max<std::size_t>(m_opt.fan_in, 2);
        // Three quarters of the budget for record bytes, a quarter for the index (8 bytes each);
        // at least one record of each.
        m_arena_cap = std::max(m_opt.memory_bytes / 4 * 3, 4 + max_record);
        m_index_cap = std::max<std::size_t>(m_opt.memory_bytes / 4 / sizeof(Entry), 1);
    }

    /// Adds a record (rec.size() <= max_record). Errors: writing a run failed.
    std::optional<Error> Add(std::span<const uint8_t> rec)
    {
        assert(rec.size() <= m_max_record);
        if (m_arena.size() + 4 + rec.size() > m_arena_cap || m_index.size() == m_index_cap) {
            if (auto e = Spill()) return e;
        }
        if (m_arena.capacity() == 0) {
            m_arena.reserve(m_arena_cap);
            m_index.reserve(m_index_cap);
        }
        const std::size_t off = m_arena.size();
        m_arena.resize(off + 4 + rec.size());
        const uint32_t len = uint32_t(rec.size());
        std::memcpy(m_arena.data() + off, &len, 4);
        if (!rec.empty()) std::memcpy(m_arena.data() + off + 4, rec.data(), rec.size());
        m_index.push_back(Entry{PrefixOf(rec), off});
        ++m_added;
        return std::nullopt;
    }

    /// Hands every record to emit(span) in order, equal keys folded; emit returns false to stop.
    /// Call once.
    template <typename Emit>
    std::optional<Error> Finish(Emit&& emit)
    {
        if (m_runs.empty()) {
            SortBuffer();
            for (const Entry& e : m_index) {
                if (!emit(Rec(e.off))) break;
            }
            Release();
            return std::nullopt;
        }
        if (!m_index.empty()) {
            if (auto e = Spill()) return e;
        }
        Release();
        while (m_runs.size() > m_opt.fan_in) {
            // Merge the oldest fan_in runs into one new run at the back.
            std::vector<external_sort_detail::Run> group;
            for (std::size_t i = 0; i < m_opt.fan_in; ++i) group.push_back(std::move(m_runs[i]));
            m_runs.erase(m_runs.begin(), m_runs.begin() + std::ptrdiff_t(m_opt.fan_in));
            auto run = external_sort_detail::CreateRun(m_opt.tmp_dir);
            if (!run) return run.error();
            external_sort_detail::RunWriter w(*run);
            if (auto e = Merge(group, [&](std::span<const uint8_t> r) { return w.Put(r); })) return e;
            if (auto e = w.Finish()) return e;
            ++m_spilled;
            m_runs.push_back(std::move(*run));
        }
        auto runs = std::move(m_runs);
        m_runs.clear();
        for (const auto& r : runs) m_merge_total += r.records;
        m_counting = true;
        return Merge(runs, emit);
    }

    uint64_t Added() const noexcept { return m_added; }
    /// Fraction of the final merge's input consumed so far (negative before it starts, or when
    /// the records never left memory).
    double MergeFraction() const noexcept
    {
        return m_merge_total == 0 ? -1.0 : double(m_merge_done) / double(m_merge_total);
    }
    /// Run files written so far (intermediate merges included).
    uint64_t Runs() const noexcept { return m_spilled; }

private:
    /// A record's place in the buffer and its order prefix (0 when `Less` has none).
    struct Entry {
        uint64_t prefix;
        uint64_t off;
    };
    uint64_t PrefixOf(std::span<const uint8_t> rec) const noexcept
    {
        if constexpr (requires { m_less.Prefix(rec); }) {
            return m_less.Prefix(rec);
        } else {
            return 0;
        }
    }

    std::span<const uint8_t> Rec(uint64_t off) const noexcept
    {
        uint32_t len;
        std::memcpy(&len, m_arena.data() + off, 4);
        return {m_arena.data() + off + 4, len};
    }
    std::span<uint8_t> MutRec(uint64_t off) noexcept
    {
        uint32_t len;
        std::memcpy(&len, m_arena.data() + off, 4);
        return {m_arena.data() + off + 4, len};
    }

    /// Sorts the index and folds equal keys (the index then names one record per key).
    void SortBuffer()
    {
        std::sort(m_index.begin(), m_index.end(), [this](const Entry& a, const Entry& b) {
            if (a.prefix != b.prefix) return a.prefix < b.prefix;
            return m_less(Rec(a.off), Rec(b.off));
        });
        if constexpr (COMBINES) {
            std::size_t out = 0;
            for (std::size_t i = 0; i < m_index.size(); ++i) {
                if (out > 0 && !m_less(Rec(m_index[out - 1].off), Rec(m_index[i].off))) {
                    m_combine(MutRec(m_index[out - 1].off), Rec(m_index[i].off));
                } else {
                    m_index[out++] = m_index[i];
                }
            }
            m_index.resize(out);
        }
    }

    std::optional<Error> Spill()
    {
        SortBuffer();
        auto run = external_sort_detail::CreateRun(m_opt.tmp_dir);
        if (!run) return run.error();
        external_sort_detail::RunWriter w(*run);
        for (const Entry& e : m_index) {
            if (!w.Put(Rec(e.off))) break;
        }
        if (auto e = w.Finish()) return e;
        ++m_spilled;
        m_runs.push_back(std::move(*run));
        m_arena.clear();
        m_index.clear();
        return std::nullopt;
    }

    void Release()
    {
        m_arena = {};
        m_index = {};
    }

    /// k-way merge of `runs` into emit, folding equal keys; the merge's read buffers share the budget.
    template <typename Emit>
    std::optional<Error> Merge(std::vector<external_sort_detail::Run>& runs, Emit&& emit)
    {
        using external_sort_detail::RunReader;
        const std::size_t buffer =
            std::clamp<std::size_t>(m_opt.memory_bytes / (runs.size() + 1), 16 * 1024, 4u << 20);
        std::vector<std::unique_ptr<RunReader>> readers;
        std::vector<std::size_t> heap;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            readers.push_back(std::make_unique<RunReader>(runs[i], m_max_record, buffer));
            if (auto e = readers.back()->Start()) return e;
            auto more = readers.back()->Next();
            if (!more) return more.error();
            if (*more) heap.push_back(i);
        }
        // A min-heap on the current records; ties go to the lower run index (a deterministic order).
        const auto after = [&](std::size_t a, std::size_t b) {
            const auto ra = readers[a]->Record(), rb = readers[b]->Record();
            if (m_less(rb, ra)) return true;
            if (m_less(ra, rb)) return false;
            return a > b;
        };
        std::make_heap(heap.begin(), heap.end(), after);
        std::vector<uint8_t> acc;
        bool have = false;
        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), after);
            const std::size_t i = heap.back();
            const auto rec = readers[i]->Record();
            if (m_counting) ++m_merge_done;
            if constexpr (COMBINES) {
                if (have && !m_less(std::span<const uint8_t>(acc), rec)) {
                    m_combine(std::span<uint8_t>(acc), rec);
                } else {
                    if (have && !emit(std::span<const uint8_t>(acc))) return std::nullopt;
                    acc.assign(rec.begin(), rec.end());
                    have = true;
                }
            } else {
                if (!emit(rec)) return std::nullopt;
            }
            auto more = readers[i]->Next();
            if (!more) return more.error();
            if (*more) {
                std::push_heap(heap.begin(), heap.end(), after);
            } else {
                heap.pop_back();
            }
        }
        if constexpr (COMBINES) {
            if (have) emit(std::span<const uint8_t>(acc));
        }
        return std::nullopt;
    }

    ExternalSortOptions m_opt;
    std::size_t m_max_record;
    Less m_less;
    Combine m_combine;
    std::size_t m_arena_cap{0};
    std::size_t m_index_cap{0};
    std::vector<uint8_t> m_arena;
    std::vector<Entry> m_index;
    std::vector<external_sort_detail::Run> m_runs;
    uint64_t m_added{0};
    uint64_t m_spilled{0};
    bool m_counting{false};
    uint64_t m_merge_total{0};
    uint64_t m_merge_done{0};
};

} // namespace ibdkit
