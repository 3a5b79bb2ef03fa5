// The four block tables (include/ibdkit/spent/tables.h) as Arrow batches: the same row producers
// as `ibdkit export`, written into ArrowTableBuilder instead of a file. The rows are made without
// the GIL; Python sees one object per column per batch (python/ibdkit/_arrow.py assembles them).
#include "arrow_table.h"
#include "bindings.h"
#include "spent.h"

#include <ibdkit/spent/tables.h>

#include "spent/emit_rows.h"

#include <nanobind/stl/string.h>

#include <string>

namespace nb = nanobind;
using namespace nb::literals;

namespace ibdkit::py {
namespace {

BlockTable ParseTable(const std::string& name)
{
    const auto t = ParseBlockTable(name);
    if (!t) throw PyError{"InvalidArgument", "unknown table \"" + name + "\": blocks, transactions, inputs or outputs"};
    return *t;
}

/// Batches of one table over blocks with spent outputs: from a SpentBlockReader directly, or
/// from any iterable of ibdkit.Block that carry their spent outputs.
class TableBatches {
public:
    TableBatches(nb::object source, const std::string& table, std::size_t batch_size)
        : m_table(ParseTable(table)), m_batch(batch_size ? batch_size : 1), m_builder(BlockTableColumns(m_table))
    {
        if (nb::isinstance<SpentReader>(source)) {
            m_reader = nb::cast<SpentReader*>(source);
            m_keep = std::move(source);
        } else {
            m_keep = nb::iter(source);
        }
    }

    /// The next batch ({"rows", "columns"}), or None after the last block.
    nb::object Next()
    {
        while (!m_done && m_builder.Rows() < m_batch && !m_builder.Full()) {
            auto block = NextBlock();
            if (!block) {
                m_done = true;
                break;
            }
            nb::gil_scoped_release nogil;
            EmitRowsTo(m_table, *block, AddressNetworkOf(block->chain()), m_builder);
        }
        if (m_builder.Rows() == 0) return nb::none();
        return m_builder.TakeBatch();
    }

private:
    std::shared_ptr<const SpentBlock> NextBlock()
    {
        if (m_reader) return m_reader->NextSpent();
        PyObject* item = PyIter_Next(m_keep.ptr());
        if (!item) {
            if (PyErr_Occurred()) throw nb::python_error();
            return nullptr;
        }
        nb::object block = nb::steal(item);
        auto spent = SpentOf(block);
        if (!spent) {
            throw PyError{"NoSpentOutputs", "a block without its spent outputs: read it with read_blocks(..., spent_outputs=True) "
                                            "or attach them with Block.with_spent_outputs()"};
        }
        return spent;
    }

    BlockTable m_table;
    std::size_t m_batch;
    ArrowTableBuilder m_builder;
    SpentReader* m_reader{nullptr};
    nb::object m_keep; ///< the reader (kept alive) or the iterator over the caller's blocks
    bool m_done{false};
};

} // namespace

void BindSpentTables(nb::module_& m)
{
    nb::class_<TableBatches>(m, "_TableBatches")
        .def(nb::init<nb::object, const std::string&, std::size_t>(), "source"_a, "table"_a, "batch_size"_a)
        .def("next", &TableBatches::Next);
    m.def("_table_columns", [](const std::string& table) { return ArrowSchema(BlockTableColumns(ParseTable(table))); }, "table"_a);
}

} // namespace ibdkit::py
