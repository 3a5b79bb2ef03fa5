// ibdkit/kv/status.h — how the chainstate's database reports an environment failure: a status
// returned (StoreStatus) or, on the typed read paths, thrown (StoreError). The store itself:
// kv/store.h.
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

/// Thrown by the typed read paths (cache fetch-through) when LevelDB itself fails.
class StoreError : public std::runtime_error {
public:
    explicit StoreError(StoreStatus st) : std::runtime_error(st.message), m_status(std::move(st)) {}
    const StoreStatus& status() const noexcept { return m_status; }

private:
    StoreStatus m_status;
};

} // namespace ibdkit
