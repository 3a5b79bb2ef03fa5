// Fuzz: undo data (Core's CBlockUndo bytes) and rev-file records. Malformed input must give a typed
// error — never a crash, a hang or an allocation sized by a lying count or record size. A decoded
// undo re-encodes to bytes that decode to the same undo, and a record whose checksum verifies
// decodes exactly as its bytes do.
#include <ibdkit/coins/undo.h>
#include <ibdkit/primitives/amount.h>

#include "blockfile/undo_file.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <vector>

using namespace ibdkit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::span<const uint8_t> in(data, size);
    auto u = DecodeBlockUndo(in);
    if (u) {
        bool in_range = true;
        for (const auto& t : u->vtxundo) {
            for (const auto& c : t.prevout) in_range = in_range && MoneyRange(c.out.value);
        }
        if (in_range) {
            auto back = DecodeBlockUndo(SerializeBlockUndo(*u));
            if (!back || !(*back == *u)) std::abort();
        }
    }

    // As a rev file: the first 32 bytes are the parent's hash, the rest the file. Records are read
    // at offset 8 and, when the first one frames, at the offset after it.
    if (size < 32) return 0;
    static const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ibdkit-fuzz-rev-" + std::to_string(::getpid()));
    static const bool made = std::filesystem::create_directories(dir) || true;
    (void)made;
    {
        std::ofstream f(UndoFilePath(dir, 0), std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(data + 32), std::streamsize(size - 32));
    }
    const BlockHash prev(uint256(std::span<const uint8_t, 32>(data, 32)));
    const MessageStart magic{0xfa, 0xbf, 0xb5, 0xda};
    UndoFileReader reader(dir, ObfuscationKey{}, magic);
    const std::span<const uint8_t> file = in.subspan(32);
    for (uint32_t pos = 8; pos < 1 << 20;) {
        auto bytes = reader.ReadBytes(0, pos, prev);
        if (!bytes) break;
        // A verified record holds exactly the file's bytes at pos, and decodes as those bytes do.
        if (bytes->size() + pos + 32 > file.size() || std::memcmp(bytes->data(), file.data() + pos, bytes->size()) != 0) std::abort();
        auto rec = reader.Read(0, pos, prev);
        if (rec.ok() != DecodeBlockUndo(*bytes).ok()) std::abort();
        pos += uint32_t(bytes->size()) + UNDO_DATA_DISK_OVERHEAD;
    }
    if (reader.bytes_read() > 2 * file.size() + 64) std::abort();

    // The same bytes as the undo payload of a well-formed record (rev file 1): it verifies, and
    // reads back the payload exactly.
    std::vector<uint8_t> record;
    AppendUndoRecord(record, magic, prev, file);
    {
        std::ofstream f(UndoFilePath(dir, 1), std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(record.data()), std::streamsize(record.size()));
    }
    auto payload = reader.ReadBytes(1, 8, prev);
    if (!payload || !std::equal(payload->begin(), payload->end(), file.begin(), file.end())) std::abort();
    if (reader.Read(1, 8, prev).ok() != DecodeBlockUndo(file).ok()) std::abort();
    return 0;
}
