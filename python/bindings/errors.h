// Errors of the Python binding: every failure of the library reaches Python as ibdkit.Error with
// `kind` (the typed error's name: an Errc name such as "EndOfData", a store status such as
// "NotFound", or "InvalidArgument") and `message`.
#pragma once

#include <ibdkit/error.h>

#include "kv/store.h"

#include <nanobind/nanobind.h>

#include <string>

namespace ibdkit::py {

struct PyError {
    std::string kind;
    std::string message;
};

/// Errc::Io keeps the store's name ("IoError"), as a chainstate's open reports it.
[[noreturn]] inline void Throw(const Error& e)
{
    throw PyError{e.code == Errc::Io ? std::string("IoError") : std::string(ErrcName(e.code)), e.message};
}

inline std::string StoreCodeName(StoreStatus::Code c)
{
    switch (c) {
    case StoreStatus::Code::Ok: return "Ok";
    case StoreStatus::Code::NotFound: return "NotFound";
    case StoreStatus::Code::IoError: return "IoError";
    case StoreStatus::Code::Corruption: return "Corrupt";
    case StoreStatus::Code::Locked: return "Locked";
    case StoreStatus::Code::InvalidArgument: return "InvalidArgument";
    case StoreStatus::Code::Refused: return "Refused";
    }
    return "IoError";
}

/// Creates ibdkit._ibdkit.Error and the translator of PyError, DecodeError and StoreError to it.
void RegisterErrors(nanobind::module_& m);

} // namespace ibdkit::py
