#include <ibdkit/blockfile/checked_read.h>

#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/validation.h>
#include <ibdkit/primitives/block.h>

#include <string>

namespace ibdkit {

std::optional<Error> CheckRecordIsBlock(std::span<const std::byte> bytes, int height, const BlockHash& want)
{
    if (bytes.size() >= BlockHeader::SIZE && BlockHash(HashSha256d(bytes.first(BlockHeader::SIZE))) == want) return std::nullopt;
    return Error{Errc::Corrupt, "the record at height " + std::to_string(height) + " is not block " + want.ToHex()};
}

Error InvalidBlockError(int height, std::string_view reason)
{
    return Error{Errc::Corrupt, "the block at height " + std::to_string(height) + " breaks a consensus rule: " + std::string(reason)};
}

Result<std::vector<uint8_t>> ReadCheckedBlock(BlockFileReader& reader, const LocatedChain& chain, int height)
{
    auto bytes = reader.Read(chain.order.blocks[std::size_t(height - chain.base_height)]);
    if (!bytes) return Error{bytes.error().code, "cannot read block at height " + std::to_string(height) + ": " + bytes.error().message};
    if (auto e = CheckRecordIsBlock(std::as_bytes(std::span(*bytes)), height, chain.headers.Hash(height))) return *e;
    auto block = DecodeBlock(std::span<const uint8_t>(*bytes));
    if (!block) return Error{block.error().code, "block at height " + std::to_string(height) + " does not decode: " + block.error().message};
    BlockValidationState state;
    if (!CheckBlockRules(*block, state, GetChainParams(chain.chain).consensus)) return InvalidBlockError(height, state.GetRejectReason());
    return std::move(*bytes);
}

} // namespace ibdkit
