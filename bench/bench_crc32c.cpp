// CRC-32C of a LevelDB table block as Core writes them (4,096 bytes of entries and the 5-byte
// trailer; ibdkit's are TABLE_BLOCK_BYTES), the check every chainstate read makes
// (src/kv/leveldb_env.h, PreadFile) and every bulk-loaded block's checksum: the CPU's instruction
// ("auto", three chains at once, src/common/crc32c.cpp) against the table.
#include "bench_case.h"

#include "common/crc32c.h"

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace ibdkit::bench {
namespace {

constexpr std::size_t BLOCK_BYTES = 4096 + 5;

Case BlockCase(const char* variant, uint32_t (*crc)(uint32_t, const void*, std::size_t) noexcept)
{
    return {"Crc32cBlock", variant, "byte", double(BLOCK_BYTES), [crc](std::string*) -> Op {
                auto buf = std::make_shared<std::vector<uint8_t>>(BLOCK_BYTES);
                std::mt19937_64 rng(21);
                for (auto& b : *buf) b = uint8_t(rng());
                return [crc, buf] {
                    const uint32_t c = crc(0, buf->data(), buf->size());
                    DoNotOptimize(c);
                };
            }};
}

const Registrar auto_case{BlockCase("auto", Crc32c)};
const Registrar table_case{BlockCase("table", Crc32cPortable)};

} // namespace
} // namespace ibdkit::bench
