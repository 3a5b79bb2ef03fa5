// ibdkit/error.h — typed errors for untrusted bytes, and Result<T>.
//
// Four kinds of failure, four mechanisms (docs/design.md):
//  1. untrusted bytes (peer, file, database value): an `Errc` code, thrown inside decoders as
//     `DecodeError` and returned at the public API as `Result<T>`;
//  2. consensus invalidity: not an error, a validation state with Core's reject reason;
//  3. environment failures (filesystem, LevelDB): `Status` at the wrapper boundary;
//  4. programmer errors: assertions, IBDKIT_EXPECTS below, on in every build.
// Nothing here holds shared state: every function is thread-safe.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ibdkit {

enum class Errc : uint16_t {
    Ok = 0,
    EndOfData,               ///< a read past the end of the available bytes
    NonCanonicalCompactSize, ///< a CompactSize that fits a shorter form
    SizeTooLarge,            ///< a length or count above its limit (MAX_SIZE, …)
    VarIntOverflow,          ///< a VARINT that does not fit its target type
    SuperfluousWitness,      ///< witness flag set but every witness stack empty
    UnknownOptionalData,     ///< transaction flag byte with unknown bits
    TrailingData,            ///< bytes left after a complete object
    BadMagic,                ///< wrong network magic (P2P, block files)
    BadChecksum,             ///< checksum mismatch (P2P payload, undo record)
    BadCommand,              ///< malformed P2P command string
    OversizedMessage,        ///< P2P payload length above the limit
    InvalidValue,            ///< a field holds a value its format forbids
    Corrupt,                 ///< stored data is inconsistent (database, block file)
    Refused,                 ///< a path ibdkit will not write: the user's data (common/write_guard.h)
    NotFound,                ///< a path that does not exist, or holds nothing of what was asked
    Locked,                  ///< another process holds it (a database's lock, a node mid-flush)
    Io,                      ///< the operating system failed a read or write
};

/// Stable, human-readable name of an error code ("EndOfData", …); "Unknown" for a value outside
/// the enum. The view points to static storage.
std::string_view ErrcName(Errc e) noexcept;

/// Thrown by stream reads and decoders on malformed untrusted input. Carries a specific code.
class DecodeError : public std::runtime_error {
public:
    /// `what` null: the message is ErrcName(code).
    explicit DecodeError(Errc code, const char* what = nullptr);
    Errc code() const noexcept { return m_code; }

private:
    Errc m_code;
};

/// An error with a code and a message, for the Result<T> API.
struct Error {
    Errc code{Errc::Ok};
    std::string message;
};

/// Either a value or an error (by default an Error; the P2P layer uses its NetError). A minimal
/// std::expected (C++23) stand-in. value() (and *, ->) on an error, or error() on a value, throws
/// std::bad_variant_access: test ok() first.
template <typename T, typename E = Error>
class [[nodiscard]] Result {
public:
    /// A result holding `value`, or one holding the error `err` (both implicit, so a function
    /// returns either as it is).
    Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
    Result(E err) : m_v(std::in_place_index<1>, std::move(err)) {}

    /// Whether it holds a value (and not an error).
    bool ok() const noexcept { return m_v.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }

    /// The value, by reference into the result (moved out of an rvalue). Only when ok().
    T& value() & { return std::get<0>(m_v); }
    const T& value() const& { return std::get<0>(m_v); }
    T&& value() && { return std::get<0>(std::move(m_v)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    /// The error. Only when !ok().
    const E& error() const { return std::get<1>(m_v); }

private:
    std::variant<T, E> m_v;
};

/// Writes "ibdkit: precondition failed at FILE:LINE: WHAT" to stderr and aborts the process: a
/// caller broke a function's contract (a programmer error, never bad input). Used through
/// IBDKIT_EXPECTS.
[[noreturn]] void PreconditionFailed(const char* what, const char* file, int line) noexcept;

/// Checks a precondition of the function it opens, in every build (NDEBUG too: the checks are
/// cheap, and a broken one would otherwise read out of bounds). `what` says which contract.
#define IBDKIT_EXPECTS(cond, what) ((cond) ? void(0) : ::ibdkit::PreconditionFailed(what, __FILE__, __LINE__))

/// Runs `fn` and turns a DecodeError into a Result error; any other exception passes through.
template <typename Fn>
auto CatchDecode(Fn&& fn) -> Result<decltype(fn())> {
    try {
        return fn();
    } catch (const DecodeError& e) {
        return Error{e.code(), e.what()};
    }
}

} // namespace ibdkit
