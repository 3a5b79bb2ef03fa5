// ibdkit.Error, its subclasses per cause, and the translation of the library's C++ errors (errors.h).
#include "errors.h"

#include <nanobind/stl/string.h>

#include <cctype>

namespace nb = nanobind;

namespace ibdkit::py {
namespace {

PyObject* g_error_type = nullptr;
PyObject* g_not_found_type = nullptr;
PyObject* g_refused_type = nullptr;
PyObject* g_argument_type = nullptr;

bool IsNameChar(char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'; }
bool IsValueChar(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '~' || c == '-';
}

/// The library's messages name the CLI's options ("pass --network regtest"); in Python they name
/// the keyword arguments ("pass network=regtest"). Option names map to parameter names by
/// replacing '-' with '_'.
std::string InPythonTerms(const std::string& message)
{
    std::string out;
    for (std::size_t i = 0; i < message.size();) {
        const bool option = message.compare(i, 2, "--") == 0 && i + 2 < message.size() &&
                            std::islower(static_cast<unsigned char>(message[i + 2])) && (i == 0 || message[i - 1] == ' ' || message[i - 1] == '(');
        if (!option) {
            out += message[i++];
            continue;
        }
        std::size_t j = i + 2;
        std::string name;
        for (; j < message.size() && IsNameChar(message[j]); ++j) name += message[j] == '-' ? '_' : message[j];
        out += name;
        // "--network regtest" → "network=regtest"; "--network," → "network".
        if (j + 1 < message.size() && message[j] == ' ' && IsValueChar(message[j + 1]) && message[j + 1] != '-' &&
            message.compare(j + 1, 3, "or ") != 0 && message.compare(j + 1, 4, "and ") != 0) {
            out += '=';
            ++j;
        }
        i = j;
    }
    return out;
}

PyObject* TypeFor(const std::string& kind)
{
    if (kind == "NotFound") return g_not_found_type;
    if (kind == "Refused") return g_refused_type;
    if (kind == "InvalidArgument") return g_argument_type;
    return g_error_type;
}

void Raise(const std::string& kind, const std::string& message)
{
    const std::string text = InPythonTerms(message);
    PyObject* type = TypeFor(kind);
    nb::object e = nb::handle(type)(text);
    e.attr("kind") = kind;
    e.attr("message") = text;
    PyErr_SetObject(type, e.ptr());
}

PyObject* Subclass(nb::module_& m, const char* name, const char* doc, PyObject* builtin)
{
    nb::object bases = nb::make_tuple(nb::handle(g_error_type), nb::handle(builtin));
    PyObject* t = PyErr_NewExceptionWithDoc((std::string("ibdkit.") + name).c_str(), doc, bases.ptr(), nullptr);
    m.attr(name) = nb::handle(t);
    return t;
}

} // namespace

void RegisterErrors(nb::module_& m)
{
    g_error_type = PyErr_NewExceptionWithDoc(
        "ibdkit.Error",
        "An ibdkit failure. `kind` names the cause (an Errc name such as 'EndOfData' or 'TrailingData' "
        "for malformed bytes; 'Corrupt', 'Locked', 'IoError' for a database; 'NotFound', 'Refused' and "
        "'InvalidArgument', raised as the subclasses NotFoundError, RefusedError and ArgumentError); "
        "`message` says what happened and what to do.",
        PyExc_Exception, nullptr);
    m.attr("Error") = nb::handle(g_error_type);
    g_not_found_type = Subclass(m, "NotFoundError", "A path that does not exist or holds nothing of what was asked (kind 'NotFound').",
                                PyExc_FileNotFoundError);
    g_refused_type = Subclass(m, "RefusedError",
                              "A path ibdkit will not write: inside a Bitcoin Core data directory, a database ibdkit did not "
                              "create, a folder of other files, or one it may not read (kind 'Refused').",
                              PyExc_PermissionError);
    g_argument_type = Subclass(m, "ArgumentError", "An argument outside what it may be (kind 'InvalidArgument').", PyExc_ValueError);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const PyError& e) {
            Raise(e.kind, e.message);
        } catch (const DecodeError& e) {
            Raise(std::string(ErrcName(e.code())), e.what());
        }
    });
}

} // namespace ibdkit::py
