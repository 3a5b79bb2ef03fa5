// src/coins/markers.h — the chainstate's two marker records as Core serializes them: B (the best
// block, a uint256) and H (the heads of an interrupted flush, a vector of uint256), and their
// one-byte keys. Read by CoinsDB (coins_db.cpp), written by the flush (batch_write.cpp).
#pragma once

#include <ibdkit/error.h>
#include <ibdkit/encoding/serialize.h>
#include <ibdkit/primitives/hash.h>


#include <cstdint>
#include <vector>

namespace ibdkit {

struct MarkerKey {
    uint8_t tag;
    template <WriteStream S>
    friend void Serialize(S& s, const MarkerKey& k) { Serialize(s, k.tag); }
};

/// A uint256 stored as a database value (B).
struct HashValue {
    uint256 h;
    template <WriteStream S>
    friend void Serialize(S& s, const HashValue& v) { Serialize(s, v.h); }
    template <ReadStream S>
    friend void Unserialize(S& s, HashValue& v) { Unserialize(s, v.h); }
};

/// std::vector<uint256> as a database value (H): CompactSize count + hashes, count bounded.
struct HeadsValue {
    std::vector<uint256> heads;
    template <WriteStream S>
    friend void Serialize(S& s, const HeadsValue& v)
    {
        WriteCompactSize(s, v.heads.size());
        for (const auto& h : v.heads) Serialize(s, h);
    }
    template <ReadStream S>
    friend void Unserialize(S& s, HeadsValue& v)
    {
        const uint64_t n = ReadCompactSize(s);
        if (n > 16) throw DecodeError(Errc::Corrupt, "head blocks record lists too many hashes");
        v.heads.resize(std::size_t(n));
        for (auto& h : v.heads) Unserialize(s, h);
    }
};

} // namespace ibdkit
