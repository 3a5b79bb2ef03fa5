// ProcessMessageBlock: block 413,567 as a complete P2P `block` message through framing, checksum,
// decode and CheckBlock; every buffer policy (the receive buffer is the policy's DataStream).
#include "bench_case.h"

#include "engine/process.h"
#include "wire/message.h"

#include <fstream>

namespace ibdkit::bench {
namespace {

std::shared_ptr<std::vector<uint8_t>> LoadMessage(std::string* why)
{
    auto path = TestDataFile("mainnet/blocks/block_413567.raw");
    if (!path) {
        *why = "tests/data/mainnet/blocks/block_413567.raw not found";
        return nullptr;
    }
    std::ifstream f(*path, std::ios::binary);
    std::vector<uint8_t> block((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto msg = std::make_shared<std::vector<uint8_t>>();
    VectorWriter w(*msg, 0);
    WriteMessage(w, GetChainParams(ChainType::MAIN).message_start, "block", block);
    return msg;
}

template <typename P>
Case ProcessCase()
{
    // Unit: bytes of the message (block 413,567 is 999,887 bytes, plus the 24-byte header).
    return {"ProcessMessageBlock", std::string(P::name), "byte", 999'887 + 24, [](std::string* why) -> Op {
                auto msg = LoadMessage(why);
                if (!msg) return {};
                const auto& params = GetChainParams(ChainType::MAIN);
                return [msg, &params] {
                    auto out = ProcessMessageBlock(*msg, params, P::id);
                    if (!out.block) std::abort(); // the real block must pass
                    DoNotOptimize(out.block->block().vtx.size());
                };
            }};
}

const bool registered = [] {
    RegisterPerPolicy([]<typename P>(P) { return ProcessCase<P>(); });
    return true;
}();

} // namespace
} // namespace ibdkit::bench
