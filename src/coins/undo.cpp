#include <ibdkit/coins/undo.h>

#include "stream/streams.h"

namespace ibdkit {

std::vector<uint8_t> SerializeBlockUndo(const BlockUndo& undo) { return SerializeToVector(undo); }

Result<BlockUndo> DecodeBlockUndo(std::span<const uint8_t> bytes) { return DecodeExact<BlockUndo>(std::as_bytes(bytes)); }

} // namespace ibdkit
