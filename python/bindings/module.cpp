// The `ibdkit._ibdkit` extension module (nanobind): a thin layer over the public C++ API
// (include/ibdkit). The Python package (python/ibdkit/__init__.py) re-exports it and adds the
// pure-Python parts (progress bars, pyarrow assembly). Design notes: docs/python.md.
//
// Rules kept here: bytes from Python are copied once into storage owned by the block object (a
// caller may mutate a bytearray later); views (transactions, inputs, outputs) point into that
// storage and keep it alive; every failure of the library becomes ibdkit.Error(kind, message);
// long calls (replay, sync, stats, batches) run without the GIL.
#include "bindings.h"
#include "errors.h"
#include "script.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

NB_MODULE(_ibdkit, m)
{
    using namespace ibdkit::py;
    m.doc() = "Native core of the ibdkit package (use the `ibdkit` package, not this module).";

    RegisterErrors(m);
    BindBlocks(m);     // blocks.cpp: Block, Transaction, Input, Output, decode_block, BlockReader
    BindEngine(m);     // engine.cpp: _replay, _sync, policies
    BindChainstate(m); // chainstate.cpp: _Chainstate, Coin, the coin and batch iterators
    BindScript(m);     // script.cpp: verify_input, Block.verify_scripts (after Block)
    BindSpentTables(m); // spent_tables.cpp: the block tables as Arrow batches
    BindSwiftSync(m);   // swiftsync.cpp: salt, hints, check_range, partials (after _Chainstate's iterators)
    m.attr("__version__") = IBDKIT_VERSION;
    m.attr("NETWORK_SUBFOLDERS") = nanobind::tuple(nanobind::cast(NetworkSubfolders()));
    m.attr("MAX_DBCACHE_MIB") = ibdkit::MAX_DBCACHE_MIB;
}
