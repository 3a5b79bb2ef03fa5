// Script verification in the Python module (python/bindings/script.cpp): verify_input, the
// InputVerdict class and Block.verify_scripts.
#pragma once

#include <nanobind/nanobind.h>

namespace ibdkit::py {

/// Adds verify_input, InputVerdict, the flag helpers and Block.verify_scripts to `m`; call it after
/// Block is bound (it adds a method to that class).
void BindScript(nanobind::module_& m);

} // namespace ibdkit::py
