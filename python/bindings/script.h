// Script verification in the Python module (python/bindings/script.cpp): verify_input, the
// InputVerdict class and Block.verify_scripts.
#pragma once

#include <ibdkit/coins/coin.h>

#include <nanobind/nanobind.h>

#include <cstddef>

namespace ibdkit::py {

/// Adds verify_input, InputVerdict, the flag helpers and Block.verify_scripts to `m`; call it after
/// Block is bound (it adds a method to that class).
void BindScript(nanobind::module_& m);

/// Spent output `i` as verify_input takes it ((value, script_pubkey), an object with .value and
/// .script_pubkey, or a dict, optionally under "txout"), with the coin's height ("creation_height" or
/// "height", default 0) and "is_coinbase" (or "coinbase", default False) where given.
Coin SpentCoinFrom(nanobind::handle h, std::size_t i);

} // namespace ibdkit::py
