// Fuzz target: assumeutxo snapshot files (the loader's reader). Any bytes after a valid regtest
// metadata prefix must read to the end or fail with a typed error — never crash, never allocate
// from the metadata's or a group's count; it never yields a duplicate or a txid out of order.
#include <ibdkit/utxo/snapshot.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace ibdkit;
    static const std::string path = (std::filesystem::temp_directory_path() /
                                     ("ibdkit-fuzz-snapshot-" + std::to_string(::getpid()))).string();
    const MessageStart regtest{0xfa, 0xbf, 0xb5, 0xda};
    // First 8 input bytes: the metadata's coin count; the rest: the coins.
    uint64_t count = 0;
    if (size >= 8) {
        std::memcpy(&count, data, 8);
        data += 8;
        size -= 8;
    }
    SnapshotMetadata m{regtest, BlockHash(), count % 64 == 63 ? count : count % 64};
    const auto head = SerializeSnapshotMetadata(m);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(head.data(), 1, head.size(), f);
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
    auto reader = SnapshotReader::Open(path, regtest);
    if (!reader) std::abort(); // the metadata written above is valid
    OutPoint op, prev;
    Coin coin;
    uint64_t n = 0;
    while (true) {
        auto more = (*reader)->Next(op, coin);
        if (!more || !*more) break;
        if (n > 0 && (op.hash < prev.hash || prev == op)) std::abort(); // unordered txids, duplicates
        prev = op;
        ++n;
    }
    std::remove(path.c_str());
    return 0;
}
