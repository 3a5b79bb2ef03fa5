// src/blockfile/read_owned.h — a block file record's bytes read into a buffer of the run's policy
// (the replay's and SwiftSync's block sources): the one place their policy is a type.
#pragma once

#include <ibdkit/blockfile/blockfile.h>

#include "stream/owned_bytes.h"
#include "stream/streams.h"

#include <cstddef>

namespace ibdkit {

/// Reads a record's block bytes into a new DataStream<Policy> — one allocation per block, as Core
/// receives each block in a message of its own — and hands its buffer over to `out`, which frees
/// it with the policy's release (copies and cleanse exactly the policy's). Returns the record's
/// size; errors as BlockFileReader::Read. A run picks the function for its policy once:
/// VisitPolicy(id, []<typename P>(P) -> ReadOwnedFn { return &ReadOwned<P>; }).
template <typename Policy>
Result<std::size_t> ReadOwned(BlockFileReader& reader, const BlockRecordPos& pos, OwnedBytes& out)
{
    DataStream<Policy> bytes;
    auto r = reader.Read(pos, bytes);
    out = OwnedBytes(std::move(bytes));
    return r;
}
using ReadOwnedFn = Result<std::size_t> (*)(BlockFileReader&, const BlockRecordPos&, OwnedBytes&);

} // namespace ibdkit
