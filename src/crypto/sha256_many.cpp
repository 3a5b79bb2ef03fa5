// Multi-buffer SHA256d (Sha256dMany): the lane scheduler shared by every kernel.
//
// A kernel compresses one 64-byte block for each of its lanes in one call. The scheduler keeps one
// message per lane: a block that lies inside one of the message's ranges is handed to the kernel
// by pointer (no copy); a block that straddles two ranges or holds the padding is assembled in a
// per-lane scratch block. When a message ends its lane takes the next message at once, so lanes
// only idle at the very end. Messages start longest first (LPT order), which keeps that end
// short; once fewer lanes are busy than make the wide kernel pay off, the messages in flight move,
// state and position, to the next (narrower) kernel of the plan. The second SHA-256 hashes 32-byte
// digests: one block each, run as full groups per kernel.
#include "crypto/sha256_internal.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

namespace ibdkit::sha256_detail {
namespace {

constexpr int MAX_LANES = 16;

inline void WriteBE32(uint8_t* p, uint32_t x)
{
    p[0] = uint8_t(x >> 24);
    p[1] = uint8_t(x >> 16);
    p[2] = uint8_t(x >> 8);
    p[3] = uint8_t(x);
}

/// One message's blocks as a few segments of consecutive blocks: runs read straight from its
/// ranges, and the blocks that straddle two ranges or hold the padding (0x80, zeros, the bit
/// length), which are assembled once, when the message starts, in the lane's `tail` buffer.
/// At most four blocks are assembled: one per range boundary and two for the padding.
struct LaneMsg {
    struct Seg {
        const uint8_t* p;
        uint64_t n;
    };
    uint8_t* out{nullptr};
    Seg seg[8];
    int nseg{0};
    int cur{0};
    alignas(64) uint8_t tail[4 * 64];

    void Push(const uint8_t* p, uint64_t n) noexcept
    {
        if (nseg > 0 && seg[nseg - 1].p + 64 * seg[nseg - 1].n == p) {
            seg[nseg - 1].n += n; // consecutive assembled blocks
        } else {
            seg[nseg++] = Seg{p, n};
        }
    }

    /// A pre-padded message: one run of whole blocks, nothing to assemble.
    void Start(const PaddedHashJob* j) noexcept
    {
        out = j->out;
        seg[0] = Seg{j->data, j->blocks};
        nseg = 1;
        cur = 0;
    }

    void Start(const HashJob* j) noexcept
    {
        out = j->out;
        nseg = 0;
        cur = 0;
        const uint64_t total = j->TotalSize();
        int part = 0;
        uint32_t off = 0;
        auto skip_empty = [&] {
            while (part < 3 && off == j->size[part]) {
                ++part;
                off = 0;
            }
        };
        skip_empty();
        uint8_t* b = tail;
        for (;;) {
            if (part < 3 && j->size[part] - off >= 64) {
                const uint32_t n = (j->size[part] - off) / 64;
                Push(j->data[part] + off, n);
                off += 64 * n;
                skip_empty();
                continue;
            }
            std::size_t filled = 0;
            while (filled < 64 && part < 3) {
                const std::size_t take = std::min<std::size_t>(64 - filled, j->size[part] - off);
                std::memcpy(b + filled, j->data[part] + off, take);
                filled += take;
                off += uint32_t(take);
                skip_empty();
            }
            if (filled >= 64) {
                Push(b, 1);
                b += 64;
                continue;
            }
            // The message ended in this block (filled = total mod 64): its padding fills the
            // block, or — when fewer than 9 bytes are left — runs into one more.
            WriteSha256Padding(b + filled, total);
            Push(b, (filled + Sha256PaddingSize(total)) / 64);
            return;
        }
    }

    /// A copy for another lane: segments inside `tail` point to the copy's tail.
    void CopyTo(LaneMsg& d) const noexcept
    {
        d.out = out;
        d.nseg = nseg;
        d.cur = cur;
        std::memcpy(d.tail, tail, sizeof tail);
        for (int i = 0; i < nseg; ++i) {
            d.seg[i] = seg[i];
            if (seg[i].p >= tail && seg[i].p < tail + sizeof tail) d.seg[i].p = d.tail + (seg[i].p - tail);
        }
    }
};

/// A message moving between stages: its position and its eight state words.
struct InFlight {
    LaneMsg m;
    uint32_t state[8];
};
struct Carry {
    InFlight v[MAX_LANES];
    int n{0};
};

/// Messages not yet started, in the order they should start.
template <typename Job>
struct Queue {
    const Job* jobs;
    const uint32_t* order;
    std::size_t next;
    std::size_t n;
    bool empty() const noexcept { return next == n; }
    const Job* Pop() noexcept { return &jobs[order[next++]]; }
};

inline uint64_t BlockCount(const HashJob& j) noexcept { return (j.TotalSize() + 9 + 63) / 64; }
inline uint64_t BlockCount(const PaddedHashJob& j) noexcept { return j.blocks; }

/// First SHA-256 of every message, on one kernel, until done or (for a non-final stage) until
/// fewer than stop_below lanes are busy with nothing left to start. Each finished message's
/// digest goes to its job's `out`.
///
/// Each step advances every busy lane by the same number of blocks — the fewest any lane has left
/// in its current segment — in one kernel call; lanes whose segment ends move to the next one, or
/// finish and take the next message. Idle lanes (only at the end) re-read a busy lane's blocks.
template <typename Job>
void RunStage(const LaneKernel& k, int stop_below, Queue<Job>& q, Carry& in, Carry& out) noexcept
{
    const int lanes = k.lanes;
    alignas(64) uint32_t s[8 * MAX_LANES];
    const uint8_t* blocks[MAX_LANES];
    LaneMsg lane[MAX_LANES];
    bool busy[MAX_LANES] = {};
    int next_in = 0;
    auto fill = [&](int l) -> bool {
        if (next_in < in.n) {
            const InFlight& f = in.v[next_in++];
            f.m.CopyTo(lane[l]);
            for (int i = 0; i < 8; ++i) k.At(s, l, i) = f.state[i];
        } else if (!q.empty()) {
            lane[l].Start(q.Pop());
            for (int i = 0; i < 8; ++i) k.At(s, l, i) = IV[i];
        } else {
            return false;
        }
        busy[l] = true;
        return true;
    };
    int active = 0;
    for (int l = 0; l < lanes; ++l) active += fill(l);
    out.n = 0;
    while (active > 0) {
        if (active < stop_below && q.empty() && next_in == in.n) {
            for (int l = 0; l < lanes; ++l) {
                if (!busy[l]) continue;
                InFlight& f = out.v[out.n++];
                lane[l].CopyTo(f.m);
                for (int i = 0; i < 8; ++i) f.state[i] = k.At(s, l, i);
            }
            return;
        }
        uint64_t n = UINT64_MAX;
        const uint8_t* any = nullptr;
        for (int l = 0; l < lanes; ++l) {
            if (!busy[l]) continue;
            const LaneMsg::Seg& g = lane[l].seg[lane[l].cur];
            n = std::min(n, g.n);
            any = g.p;
        }
        for (int l = 0; l < lanes; ++l) blocks[l] = busy[l] ? lane[l].seg[lane[l].cur].p : any;
        k.step(s, blocks, std::size_t(n));
        for (int l = 0; l < lanes; ++l) {
            if (!busy[l]) continue;
            LaneMsg& m = lane[l];
            LaneMsg::Seg& g = m.seg[m.cur];
            g.p += 64 * n;
            g.n -= n;
            if (g.n != 0 || ++m.cur < m.nseg) continue;
            uint8_t* o = m.out;
            for (int i = 0; i < 8; ++i) WriteBE32(o + 4 * i, k.At(s, l, i));
            if (!fill(l)) {
                busy[l] = false;
                --active;
            }
        }
    }
}

/// RunStage for the first stage of pre-padded messages (nothing carried in): one run of blocks
/// per message, so each lane is just a pointer, a block count and an output, kept in flat arrays.
/// LANES is k.lanes, as a constant: the per-lane bookkeeping compiles to straight-line code.
template <int LANES>
void RunPaddedStageOf(const LaneKernel& k, int stop_below, Queue<PaddedHashJob>& q, Carry& out) noexcept
{
    constexpr int lanes = LANES;
    const LaneKernel kk{LANES, k.step}; // At() with a constant lane count
    alignas(64) uint32_t s[8 * MAX_LANES];
    const uint8_t* ptr[MAX_LANES];
    uint64_t rem[MAX_LANES] = {}; // blocks left; 0 = idle
    uint8_t* dst[MAX_LANES];
    auto fill = [&](int l) -> bool {
        if (q.empty()) return false;
        const PaddedHashJob* j = q.Pop(); // blocks >= 1: Sha256dManyPadded filters the others
        ptr[l] = j->data;
        rem[l] = j->blocks;
        dst[l] = j->out;
        for (int i = 0; i < 8; ++i) kk.At(s, l, i) = IV[i];
        return true;
    };
    int active = 0;
    for (int l = 0; l < lanes; ++l) active += fill(l);
    out.n = 0;
    while (active > 0) {
        if (active < stop_below && q.empty()) {
            for (int l = 0; l < lanes; ++l) {
                if (rem[l] == 0) continue;
                InFlight& f = out.v[out.n++];
                const PaddedHashJob rest{ptr[l], uint32_t(rem[l]), dst[l]};
                f.m.Start(&rest);
                for (int i = 0; i < 8; ++i) f.state[i] = kk.At(s, l, i);
            }
            return;
        }
        uint64_t n = UINT64_MAX;
        const uint8_t* any = nullptr;
        for (int l = 0; l < lanes; ++l) {
            if (rem[l] != 0 && rem[l] < n) {
                n = rem[l];
                any = ptr[l];
            }
        }
        const uint8_t* blocks[MAX_LANES];
        for (int l = 0; l < lanes; ++l) blocks[l] = rem[l] ? ptr[l] : any; // idle lanes re-read a busy one
        kk.step(s, blocks, std::size_t(n));
        for (int l = 0; l < lanes; ++l) {
            if (rem[l] == 0) continue;
            ptr[l] += 64 * n;
            rem[l] -= n;
            if (rem[l] != 0) continue;
            for (int i = 0; i < 8; ++i) WriteBE32(dst[l] + 4 * i, kk.At(s, l, i));
            if (!fill(l)) --active;
        }
    }
}

void RunPaddedStage(const LaneKernel& k, int stop_below, Queue<PaddedHashJob>& q, Carry& out) noexcept
{
    switch (k.lanes) {
    case 16: RunPaddedStageOf<16>(k, stop_below, q, out); break;
    case 8: RunPaddedStageOf<8>(k, stop_below, q, out); break;
    case 2: RunPaddedStageOf<2>(k, stop_below, q, out); break;
    default: RunPaddedStageOf<1>(k, stop_below, q, out); break;
    }
}

/// Second SHA-256: each job's `out` holds a 32-byte digest; replace it by its SHA-256. Full groups
/// on each kernel in turn; the last kernel also takes the remainder.
template <typename Job>
void SecondHash(const ManyPlan& plan, std::span<const Job> jobs) noexcept
{
    alignas(64) uint32_t s[8 * MAX_LANES];
    alignas(64) uint8_t blk[MAX_LANES][64];
    const uint8_t* blocks[MAX_LANES];
    for (int l = 0; l < MAX_LANES; ++l) {
        // 0x80 after the 32 digest bytes, zeros, bit length 256.
        std::memset(blk[l] + 32, 0, 32);
        blk[l][32] = 0x80;
        blk[l][62] = 0x01;
        blocks[l] = blk[l];
    }
    std::size_t i = 0;
    for (int st = 0; st < plan.stages; ++st) {
        const LaneKernel& k = plan.kernel[st];
        const bool last = st + 1 == plan.stages;
        while (jobs.size() - i >= std::size_t(k.lanes) || (last && i < jobs.size())) {
            const int n = int(std::min<std::size_t>(std::size_t(k.lanes), jobs.size() - i));
            for (int l = 0; l < k.lanes; ++l) {
                if (l < n) std::memcpy(blk[l], jobs[i + std::size_t(l)].out, 32);
                for (int w = 0; w < 8; ++w) k.At(s, l, w) = IV[w];
            }
            k.step(s, blocks, 1);
            for (int l = 0; l < n; ++l) {
                uint8_t* o = jobs[i + std::size_t(l)].out;
                for (int w = 0; w < 8; ++w) WriteBE32(o + 4 * w, k.At(s, l, w));
            }
            i += std::size_t(n);
        }
    }
}

template <typename Job>
void RunManyOf(const ManyPlan& plan, std::span<const Job> jobs) noexcept
{
    const std::size_t n = jobs.size();
    if (n == 0) return;
    // Longest first: a counting sort on the block count (capped; the few longer messages are
    // then sorted exactly). Linear time, no comparisons for the common short messages.
    constexpr uint32_t CAP = 255;
    uint32_t stack_order[1024];
    std::unique_ptr<uint32_t[]> heap_order;
    uint32_t* order = stack_order;
    if (n > std::size(stack_order)) {
        heap_order.reset(new (std::nothrow) uint32_t[n]);
        if (!heap_order) {
            // Out of memory: hash in the given order, in chunks that fit on the stack.
            for (std::size_t i = 0; i < n; i += std::size(stack_order)) {
                RunManyOf(plan, jobs.subspan(i, std::min(n - i, std::size(stack_order))));
            }
            return;
        }
        order = heap_order.get();
    }
    uint32_t count[CAP + 2] = {};
    auto key = [&](std::size_t i) {
        return CAP - uint32_t(std::min<uint64_t>(BlockCount(jobs[i]), CAP)); // 0 = longest
    };
    for (std::size_t i = 0; i < n; ++i) ++count[key(i) + 1];
    for (uint32_t b = 1; b <= CAP + 1; ++b) count[b] += count[b - 1];
    for (std::size_t i = 0; i < n; ++i) order[count[key(i)]++] = uint32_t(i);
    // count[0] is now the size of the capped bucket (it was filled first).
    if (count[0] > 1) {
        std::sort(order, order + count[0], [&](uint32_t a, uint32_t b) { return BlockCount(jobs[a]) > BlockCount(jobs[b]); });
    }

    Queue<Job> q{jobs.data(), order, 0, n};
    Carry carry[2];
    int first = 0;
    if constexpr (std::is_same_v<Job, PaddedHashJob>) {
        RunPaddedStage(plan.kernel[0], plan.stages > 1 ? plan.stop_below[0] : 0, q, carry[1]);
        first = 1;
    }
    for (int st = first; st < plan.stages; ++st) {
        const bool last = st + 1 == plan.stages;
        RunStage(plan.kernel[st], last ? 0 : plan.stop_below[st], q, carry[st & 1], carry[(st + 1) & 1]);
    }
    SecondHash(plan, jobs);
}

} // namespace

void RunMany(const ManyPlan& plan, std::span<const HashJob> jobs) noexcept
{
    RunManyOf(plan, jobs);
}

void RunManyPadded(const ManyPlan& plan, std::span<const PaddedHashJob> jobs) noexcept
{
    RunManyOf(plan, jobs);
}

} // namespace ibdkit::sha256_detail

namespace ibdkit {

void Sha256dMany(std::span<const HashJob> jobs) noexcept
{
    sha256_detail::RunMany(sha256_detail::ActiveEngine().many, jobs);
}

void Sha256dManyPadded(std::span<const PaddedHashJob> jobs) noexcept
{
    const auto& plan = sha256_detail::ActiveEngine().many;
    if (std::any_of(jobs.begin(), jobs.end(), [](const PaddedHashJob& j) { return j.blocks == 0; })) [[unlikely]] {
        // Not padded messages (a lane would never finish one): skipped, their `out` untouched;
        // the others are hashed one by one (a misuse, so no batch and no allocation).
        for (const PaddedHashJob& j : jobs) {
            if (j.blocks != 0) sha256_detail::RunManyPadded(plan, std::span<const PaddedHashJob>(&j, 1));
        }
        return;
    }
    sha256_detail::RunManyPadded(plan, jobs);
}

void WriteSha256Padding(uint8_t* dst, uint64_t len) noexcept
{
    const std::size_t n = Sha256PaddingSize(len);
    dst[0] = 0x80;
    std::memset(dst + 1, 0, n - 9);
    const uint64_t bits = len * 8;
    sha256_detail::WriteBE32(dst + n - 8, uint32_t(bits >> 32));
    sha256_detail::WriteBE32(dst + n - 4, uint32_t(bits));
}

} // namespace ibdkit
