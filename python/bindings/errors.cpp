// ibdkit.Error and the translation of the library's C++ errors (errors.h).
#include "errors.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace ibdkit::py {
namespace {

PyObject* g_error_type = nullptr;

void Raise(const std::string& kind, const std::string& message)
{
    nb::handle type(g_error_type);
    nb::object e = type(kind + ": " + message);
    e.attr("kind") = kind;
    e.attr("message") = message;
    PyErr_SetObject(g_error_type, e.ptr());
}

} // namespace

void RegisterErrors(nb::module_& m)
{
    g_error_type = PyErr_NewExceptionWithDoc(
        "ibdkit.Error",
        "An ibdkit failure. `kind` names the typed error (an Errc name such as 'EndOfData' or "
        "'TrailingData' for malformed bytes, 'NotFound'/'Locked'/'Corrupt'/'IoError' for a "
        "chainstate, 'InvalidArgument' for a bad option); `message` says what happened.",
        PyExc_Exception, nullptr);
    m.attr("Error") = nb::handle(g_error_type);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const PyError& e) {
            Raise(e.kind, e.message);
        } catch (const DecodeError& e) {
            Raise(std::string(ErrcName(e.code())), e.what());
        } catch (const StoreError& e) {
            Raise(StoreCodeName(e.status().code), e.what());
        }
    });
}

} // namespace ibdkit::py
