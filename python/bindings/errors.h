// Errors of the Python binding: every failure of the library reaches Python as ibdkit.Error with
// `kind` (the typed error's name: the Errc name, such as "EndOfData", "NotFound" or "Corrupt", with
// Errc::Io as "IoError"; "InvalidArgument" for an argument's misuse) and `message`.
#pragma once

#include <ibdkit/error.h>

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

/// Creates ibdkit._ibdkit.Error and the translator of PyError and DecodeError to it (the library's
/// entry points return a failure of the store as an Error, never throw it).
void RegisterErrors(nanobind::module_& m);

} // namespace ibdkit::py
