// UTXO set exports as text (include/ibdkit/utxo/export.h): CSV and JSON lines, written through the
// shared buffered writer and read back row by row.
#include "utxo/export_internal.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace ibdkit::export_detail {

namespace {

/// Writes rows for one export; keeps the hex of the current txid (a transaction's outputs are
/// contiguous in key order).
class RowWriter {
public:
    RowWriter(BufferedFileWriter& o, ExportFormat f, AddressNetwork net) : m_o(o), m_format(f), m_net(net) {}

    /// False once writing to the file failed.
    bool Write(const OutPoint& op, const Coin& c, TxoutType tt)
    {
        const Script& s = c.out.script_pubkey;
        // Fixed parts of a JSON row < 160 bytes; numbers < 64; txid 64; address; script hex.
        if (!m_o.Room(320 + MAX_ADDRESS_LENGTH + 2 * std::size_t(s.size()))) return false;
        if (!m_have_txid || op.hash != m_txid) {
            m_txid = op.hash;
            m_have_txid = true;
            char* p = m_txid_hex.data();
            const uint8_t* h = op.hash.data();
            for (std::size_t i = 0; i < 32; ++i) std::memcpy(p + 2 * i, HEX_PAIRS[h[31 - i]].data(), 2);
        }
        const std::string_view type = GetTxnOutputType(tt);
        char addr[MAX_ADDRESS_LENGTH];
        const std::size_t addr_len = EncodeAddressInto(s, tt, m_net, addr);
        BufferedFileWriter& o = m_o;
        if (m_format == ExportFormat::Csv) {
            o.Put(m_txid_hex.data(), 64);
            o.Put(',');
            o.Dec(op.n);
            o.Put(',');
            o.Dec(c.height);
            o.Put(c.coinbase ? std::string_view(",1,") : std::string_view(",0,"));
            o.Dec(c.out.value);
            o.Put(',');
            o.Put(type);
            o.Put(',');
            o.Put(addr, addr_len);
            o.Put(',');
            o.Hex(s.data(), s.size());
            o.Put('\n');
        } else {
            o.Put("{\"txid\":\"");
            o.Put(m_txid_hex.data(), 64);
            o.Put("\",\"vout\":");
            o.Dec(op.n);
            o.Put(",\"height\":");
            o.Dec(c.height);
            o.Put(c.coinbase ? std::string_view(",\"coinbase\":true,\"value\":")
                             : std::string_view(",\"coinbase\":false,\"value\":"));
            o.Dec(c.out.value);
            o.Put(",\"script_type\":\"");
            o.Put(type);
            if (addr_len) {
                o.Put("\",\"address\":\"");
                o.Put(addr, addr_len);
                o.Put('"');
            } else {
                o.Put("\",\"address\":null");
            }
            o.Put(",\"script_pubkey\":\"");
            o.Hex(s.data(), s.size());
            o.Put("\"}\n");
        }
        return true;
    }

private:
    BufferedFileWriter& m_o;
    ExportFormat m_format;
    AddressNetwork m_net;
    Txid m_txid;
    bool m_have_txid{false};
    std::array<char, 64> m_txid_hex{};
};

/// Parses one row the way WriteRow wrote it. Returns false on any deviation.
bool ParseRow(ExportFormat f, std::string_view line, OutPoint& op, Coin& c, std::vector<uint8_t>& script, TxoutType& type)
{
    std::string_view fields[8];
    if (f == ExportFormat::Csv) {
        std::size_t start = 0;
        for (int k = 0; k < 7; ++k) {
            const void* comma = std::memchr(line.data() + start, ',', line.size() - start);
            if (!comma) return false;
            const std::size_t at = std::size_t(static_cast<const char*>(comma) - line.data());
            fields[k] = line.substr(start, at - start);
            start = at + 1;
        }
        fields[7] = line.substr(start);
        if (fields[7].find(',') != std::string_view::npos) return false;
    } else {
        // {"txid":"..","vout":N,"height":N,"coinbase":B,"value":N,"script_type":"..","address":..,"script_pubkey":".."}
        static constexpr std::string_view KEYS[8] = {"{\"txid\":",   ",\"vout\":", ",\"height\":",
                                                     ",\"coinbase\":", ",\"value\":", ",\"script_type\":",
                                                     ",\"address\":", ",\"script_pubkey\":"};
        std::size_t pos = 0;
        for (int k = 0; k < 8; ++k) {
            if (line.substr(pos, KEYS[k].size()) != KEYS[k]) return false;
            pos += KEYS[k].size();
            std::size_t end = pos;
            if (end < line.size() && line[end] == '"') {
                end = line.find('"', end + 1);
                if (end == std::string_view::npos) return false;
                fields[k] = line.substr(pos + 1, end - pos - 1);
                ++end;
            } else {
                while (end < line.size() && line[end] != ',' && line[end] != '}') ++end;
                fields[k] = line.substr(pos, end - pos);
            }
            pos = end;
        }
        if (line.substr(pos) != "}") return false;
        if (fields[3] == "true") fields[3] = "1";
        else if (fields[3] == "false") fields[3] = "0";
        else return false;
    }
    int64_t amount;
    if (!ParseTxid(fields[0], op.hash) || !ParseNum(fields[1], op.n) || !ParseNum(fields[2], c.height) ||
        (fields[3] != "0" && fields[3] != "1") || !ParseNum(fields[4], amount) || !ParseHexInto(fields[7], script)) {
        return false;
    }
    c.coinbase = fields[3] == "1";
    c.out.value = amount;
    c.out.script_pubkey.assign(script.data(), script.size());
    // The derived columns must be what the script says.
    type = Solver(c.out.script_pubkey.span());
    return fields[5] == GetTxnOutputType(type);
}

} // namespace

Result<UtxoStats> TextStats(ExportFormat f, const fs::path& file, const ExportProgress& progress)
{
    File in(file, "rb");
    if (!in.get()) return Error{Errc::InvalidValue, "cannot open " + file.string() + ": " + std::strerror(errno)};
    std::error_code ec;
    const double size = double(std::max<uintmax_t>(1, fs::file_size(file, ec)));
    UtxoStatsBuilder builder;
    UtxoStats stats;
    std::vector<char> buf(1 << 20);
    std::string carry;
    std::vector<uint8_t> script;
    OutPoint op;
    Coin coin;
    uint64_t line_no = 0, rows = 0, consumed = 0;
    bool header_seen = f != ExportFormat::Csv;
    // One thread: handing rows to a hashing thread cost more in cache traffic than it saved.
    auto handle = [&](std::string_view line) -> bool {
        ++line_no;
        if (!header_seen) {
            header_seen = true;
            return line == CSV_HEADER;
        }
        TxoutType type;
        if (!ParseRow(f, line, op, coin, script, type)) return false;
        builder.Add(op, coin, type);
        if (progress && (++rows & 0xffff) == 0) progress("verify", rows, double(consumed) / size);
        return true;
    };
    const int fd = fileno(in.get());
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    while (true) {
        ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return Error{Errc::Corrupt, "reading " + file.string() + ": " + std::strerror(errno)};
        if (got == 0) break;
        const std::size_t n = std::size_t(got);
        DropCachedRange(fd, consumed, consumed + n); // read once: let the pages go
        consumed += n;
        std::string_view chunk(buf.data(), n);
        std::size_t start = 0;
        while (true) {
            const std::size_t nl = chunk.find('\n', start);
            if (nl == std::string_view::npos) break;
            bool ok;
            if (!carry.empty()) {
                carry.append(chunk.substr(start, nl - start));
                ok = handle(carry);
                carry.clear();
            } else {
                ok = handle(chunk.substr(start, nl - start));
            }
            if (!ok) return Error{Errc::Corrupt, file.string() + ": line " + std::to_string(line_no) + " does not parse"};
            start = nl + 1;
        }
        carry.append(chunk.substr(start));
        if (carry.size() > (64u << 20)) return Error{Errc::Corrupt, file.string() + ": line too long"};
    }
    if (!carry.empty()) return Error{Errc::Corrupt, file.string() + ": last line has no newline"};
    if (!header_seen) return Error{Errc::Corrupt, file.string() + ": no header"};
    builder.Finish(stats);
    return stats;
}

Result<uint64_t> WriteText(const CoinsDB& db, ExportFormat format, const fs::path& out, AddressNetwork net,
                           UtxoStatsBuilder& builder, const ExportProgress& progress, UtxoStats& chain_stats)
{
    File f(out, "wb");
    if (!f.get()) return Error{Errc::InvalidValue, "cannot open " + out.string() + " for writing: " + std::strerror(errno)};
    BufferedFileWriter o(f.get());
    RowWriter rows(o, format, net);
    if (format == ExportFormat::Csv) {
        o.Room(CSV_HEADER.size() + 1);
        o.Put(CSV_HEADER);
        o.Put('\n');
    }
    // This thread walks, decodes and hashes; the pipe's thread formats and writes.
    CoinPipe pipe([&](const CoinRow* batch, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            if (!rows.Write(batch[i].op, batch[i].coin, batch[i].type)) return false;
        }
        return true;
    });
    auto r = WalkInto(db, pipe, builder, progress);
    const bool write_failed = !pipe.Finish() || !o.Drain();
    if (!r) return r.error();
    if (write_failed || !f.Close()) {
        const int err = o.Errno() ? o.Errno() : errno;
        return Error{Errc::InvalidValue, "writing " + out.string() + " failed: " + std::strerror(err)};
    }
    builder.Finish(chain_stats);
    return o.Bytes();
}

} // namespace ibdkit::export_detail
