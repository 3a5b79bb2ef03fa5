// An assumeutxo snapshot proven to be a chain's UTXO set with SwiftSync's sums
// (swiftsync/verify_snapshot.h).
#include <ibdkit/swiftsync/verify_snapshot.h>

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/swiftsync/hints.h>
#include <ibdkit/utxo/snapshot.h>

#include "memory/cleanse.h"
#include "swiftsync/block_walk.h"
#include "swiftsync/range_internal.h"

#include <chrono>
#include <limits>
#include <string>
#include <vector>

namespace ibdkit::swiftsync {

namespace {

/// A hintsfile for blocks 1..n that hints no output unspent: every output goes into agg_out.
Result<Hints> NothingUnspent(uint32_t n)
{
    std::vector<uint8_t> bytes(HINTS_HEADER_SIZE + n, 0); // each block's list: a count of 0
    std::copy(HINTS_MAGIC.begin(), HINTS_MAGIC.end(), bytes.begin());
    bytes[4] = HINTS_VERSION;
    WriteLE32(bytes.data() + 5, n);
    return Hints::Parse(std::move(bytes));
}

} // namespace

Result<SnapshotVerdict> VerifySnapshot(const VerifySnapshotOptions& o)
{
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t cleansed_before = CleansedBytes();
    auto loc = LocateForMode(o.source, o.mode);
    if (!loc) return loc.error();
    const ChainParams& params = GetChainParams(loc->chain);
    auto reader = SnapshotReader::Open(o.snapshot, params.message_start);
    if (!reader) return reader.error();
    SnapshotVerdict res;
    res.chain = loc->chain;
    res.mode = o.mode;
    res.base = (*reader)->metadata().base_blockhash;
    auto height = HeightInChain(*loc, res.base);
    if (!height) return height.error();
    res.height = *height;
    if (res.height < 1) return Error{Errc::InvalidValue, "the snapshot's base block is the genesis block: there is nothing to check"};
    (*reader)->SetBaseHeight(res.height);
    auto hints = NothingUnspent(res.height);
    if (!hints) return hints.error();

    const Salt salt = Salt::Random();
    CheckRangeOptions ro;
    ro.threads = o.threads;
    ro.policy = o.policy;
    ro.collect_unspent = false;
    ro.on_progress = o.on_progress;
    CoinsModeOptions co;
    co.assumevalid = o.assumevalid;
    co.minimum_chain_work = o.minimum_chain_work;
    co.skip_scripts = o.skip_scripts;
    auto partial = CheckFromGenesis(*loc, o.source.datadir, *hints, salt, res.height, o.mode, ro, co);
    if (!partial) return partial.error();

    // The snapshot's coins, each as if spent after block n.
    const SaltedHasher hasher(salt);
    OutPoint op;
    Coin coin;
    while (true) {
        auto more = (*reader)->Next(op, coin);
        if (!more) return more.error();
        if (!*more) break;
        partial->agg_in.Add(hasher.HashElement(o.mode, op, coin));
        ++partial->counts.unspent;
        const uint64_t value = uint64_t(std::max<Amount>(coin.out.value, 0));
        partial->supply = partial->supply > std::numeric_limits<uint64_t>::max() - value ? std::numeric_limits<uint64_t>::max()
                                                                                          : partial->supply + value;
    }
    res.script_checked_inputs = partial->script_checked_inputs;
    res.bytes_cleansed = CleansedBytes() - cleansed_before;
    res.verdict = Combine(std::span<const Partial>(&*partial, 1), res.height, loc->chain);
    if (res.verdict.kind == VerdictKind::AggregatesDiffer) {
        res.verdict.reason = "the snapshot is not the UTXO set of blocks 1.." + std::to_string(res.height) +
                             ": the outputs created are not the inputs spent plus the snapshot's coins";
    }
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
}

std::string SnapshotVerdict::Reason() const
{
    if (Certified()) return {};
    if (!verdict.ok) return verdict.reason;
    return "the snapshot is not certified: outpoints mode proved only that its outpoints are the UTXO set's at its base "
           "block, not its coins' heights, coinbase flags, amounts or scripts; --mode coins with --datadir proves them";
}

} // namespace ibdkit::swiftsync
