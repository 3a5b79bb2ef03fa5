// The block-table export (run/block_export.h).
#include <ibdkit/run/block_export.h>

#include <ibdkit/utxo/address.h>

#include <chrono>

namespace ibdkit::run {

Result<BlockExportResult> ExportBlockTable(const BlockExportOptions& o)
{
    auto reader = SpentBlockReader::Open(o.reader);
    if (!reader) return reader.error();
    auto writer = TableWriter::Create(o.out, o.format, BlockTableName(o.table), BlockTableColumns(o.table));
    if (!writer) return writer.error();
    const AddressNetwork net = AddressNetworkOf((*reader)->chain());
    const auto start = std::chrono::steady_clock::now();
    auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    BlockExportResult r;
    r.from_height = (*reader)->first_height();
    while ((*writer)->ok()) {
        auto b = (*reader)->Next();
        if (!b) return Error{b.error().code, b.error().message + " (nothing written to " + o.out.string() + ")"};
        if (!*b) break;
        EmitRows(o.table, **b, net, **writer);
        ++r.blocks;
        r.block_bytes += (*b)->size();
        r.to_height = (*b)->height();
        if (o.on_progress) {
            o.on_progress({.height = r.to_height, .first_height = r.from_height, .last_height = (*reader)->last_height(),
                           .rows = (*writer)->Rows(), .block_bytes = r.block_bytes, .seconds = since()});
        }
    }
    if (auto e = (*writer)->Finish()) return Error{e->code, e->message + " (writing " + o.out.string() + ")"};
    r.rows = (*writer)->Rows();
    r.seconds = since();
    return r;
}

} // namespace ibdkit::run
