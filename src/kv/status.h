// src/kv/status.h — how the chainstate's database reports an environment failure inside the
// library: a status returned (StoreStatus) or, under the UTXO cache's fetch-through, thrown
// (StoreError). The store itself: kv/store.h. The public reads (coins/coins_db.h) return both as
// an Error.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace ibdkit {

/// Environment failure at the LevelDB boundary.
struct StoreStatus {
    enum class Code { Ok, NotFound, IoError, Corruption, Locked, InvalidArgument, Refused };
    Code code{Code::Ok};
    std::string message;

    bool ok() const noexcept { return code == Code::Ok; }
    static StoreStatus Ok() { return {}; }
    static StoreStatus Error(Code c, std::string msg) { return {c, std::move(msg)}; }
};

/// Thrown by the store's reads when LevelDB itself fails; CoinsDB's public reads return it as an
/// Error, the cache's fetch-through carries it to the run that catches it.
class StoreError : public std::runtime_error {
public:
    explicit StoreError(StoreStatus st) : std::runtime_error(st.message), m_status(std::move(st)) {}
    const StoreStatus& status() const noexcept { return m_status; }

private:
    StoreStatus m_status;
};

} // namespace ibdkit
