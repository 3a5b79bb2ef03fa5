// Fuzz: Core block index records (docs/formats.md §8) through the decoder, and the decoded entries through
// best-chain selection. Malformed values must give typed errors — never a crash, a hang or an
// allocation sized by a lying field.
#include "blockfile/block_index.h"

#include <cstdlib>

using namespace ibdkit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    // The input is a sequence of values, each prefixed by one length byte; every decoded entry joins
    // an index whose genesis is the first entry's hash.
    BlockIndex index;
    std::size_t pos = 0;
    while (pos < size && index.entries.size() < 64) {
        const std::size_t len = std::min<std::size_t>(data[pos], size - pos - 1);
        const std::span<const uint8_t> value(data + pos + 1, len);
        pos += 1 + len;
        const BlockHash key(HashSha256d(value));
        auto e = DecodeBlockIndexEntry(key, value);
        if (!e) continue;
        if (e->height < 0 || e->file < -1) std::abort();
        // Key the entry by its header as ReadBlockIndex requires.
        e->hash = BlockHash(HashSha256d(std::span<const uint8_t>(e->header)));
        index.entries.push_back(*e);
    }
    if (index.entries.empty()) return 0;
    auto best = SelectBestChain(index, index.entries.front().hash);
    if (best) {
        if (best->entries.size() > index.entries.size()) std::abort();
        for (std::size_t h = 0; h < best->entries.size(); ++h) {
            const auto& e = index.entries[best->entries[h]];
            if (e.height != int(h) || !(e.status & BLOCK_HAVE_DATA) || (e.status & BLOCK_FAILED_MASK)) std::abort();
        }
    }
    return 0;
}
