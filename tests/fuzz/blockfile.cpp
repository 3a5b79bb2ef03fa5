// Fuzz: block-file bytes (framing, xor, garbage, truncation) through the scanner, the chain orderer
// and the block decoder. Malformed input must give typed errors or be skipped and counted — never a
// crash, a hang or an allocation sized by a lying length.
#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/primitives/block.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>

using namespace ibdkit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 9) return 0;
    static const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("ibdkit-fuzz-blk-" + std::to_string(::getpid()) + ".dat");
    // First 8 bytes: an xor key (applied as Core's xor.dat would be); the rest: the file.
    ObfuscationKey key;
    for (int i = 0; i < 8; ++i) key.bytes[std::size_t(i)] = std::byte(data[i] & (data[0] & 1 ? 0xff : 0));
    {
        std::ofstream f(file, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(data + 8), std::streamsize(size - 8));
    }
    const std::array<uint8_t, 4> magic{0xfa, 0xbf, 0xb5, 0xda};
    ChainOrderer orderer(BlockHash{});
    BlockFileReader reader({file}, key);
    uint64_t seen_bytes = 0, records = 0;
    auto st = ScanBlockFiles({file}, magic, key, [&](const BlockRecordPos& pos, std::span<const uint8_t, 80> hdr) {
        if (pos.size < 80 || pos.offset < 8 || pos.offset + pos.size > size - 8) std::abort();
        seen_bytes += pos.size;
        ++records;
        orderer.Add(pos, hdr);
        auto b = reader.Read(pos);
        if (!b || b->size() != pos.size || !std::equal(hdr.begin(), hdr.end(), b->begin())) std::abort();
        auto block = DecodeBlock(*b);
        (void)block; // typed error or a block: both fine
        auto frame = reader.ReadFrame(0, pos.offset, magic);
        if (!frame || frame->size != pos.size) std::abort();
    });
    if (st && st->bytes != seen_bytes) std::abort();
    if (st && st->bytes + st->records * 8 + st->skipped_bytes + st->zero_tail_bytes > size - 8) std::abort();
    // The scan reads records' 88-byte prefixes plus forward-moving resync windows: linear in the
    // file size, never a re-read per garbage byte.
    if (st && st->bytes_read > records * RECORD_PREFIX_SIZE + 3 * size + (1 << 20)) std::abort();
    (void)orderer.Finish();
    return 0;
}
