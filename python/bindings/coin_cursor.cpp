// CoinCursor over StoreIterator, counts and Arrow batches (coin_cursor.h).
#include "coin_cursor.h"

#include "errors.h"

#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/coins/store.h>
#include <ibdkit/memory/policy.h>
#include <ibdkit/stream/streams.h>

#include <cstring>

namespace ibdkit::py {
namespace {


template <typename P>
class CursorImpl final : public CoinCursor {
public:
    explicit CursorImpl(const Store& store) : m_it(store.NewIterator())
    {
        const std::byte prefix{DB_COIN};
        m_it->Seek(std::span<const std::byte>(&prefix, 1));
    }
    bool Next(OutPoint& op, Coin& coin) override
    {
        if (m_done) return false;
        if (m_started) m_it->Next();
        m_started = true;
        if (!m_it->Valid()) return Finish();
        const auto key = m_it->Key();
        if (key.empty() || key[0] != std::byte{DB_COIN}) return Finish();
        auto k = DecodeCoinKey(key);
        if (!k) return Fail(k.error());
        m_value.clear();
        m_it->ValueInto(m_value);
        auto c = DecodeCoinValue(m_value.span());
        if (!c) return Fail(c.error());
        op = *k;
        coin = std::move(*c);
        ++m_n;
        return true;
    }

private:
    bool Finish()
    {
        m_done = true;
        const StoreStatus st = m_it->status();
        if (!st.ok()) m_error = Error{Errc::Corrupt, st.message};
        return false;
    }
    bool Fail(const Error& e)
    {
        m_done = true;
        m_error = Error{e.code == Errc::EndOfData ? Errc::Corrupt : e.code,
                        "coin record #" + std::to_string(m_n) + ": " + e.message};
        return false;
    }
    std::unique_ptr<StoreIterator> m_it;
    DataStream<P> m_value;
    uint64_t m_n{0};
    bool m_started{false}, m_done{false};
};

constexpr char HEX[] = "0123456789abcdef";

void AppendDisplayHex(std::string& out, const uint8_t* internal)
{
    const std::size_t at = out.size();
    out.resize(at + 64);
    char* p = out.data() + at;
    for (int i = 31; i >= 0; --i) {
        *p++ = HEX[internal[i] >> 4];
        *p++ = HEX[internal[i] & 15];
    }
}

template <typename T>
void AppendLE(std::string& out, T v)
{
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T)); // x86-64 and every platform Arrow targets are little-endian
    out.append(b, sizeof(T));
}

void AppendOffset(std::string& out, std::size_t n) { AppendLE<int32_t>(out, int32_t(n)); }

void SetBit(std::string& bits, std::size_t i, bool v)
{
    if (i % 8 == 0) bits.push_back('\0');
    if (v) bits.back() = char(uint8_t(bits.back()) | uint8_t(1u << (i % 8)));
}

} // namespace

void CoinCursor::ThrowIfFailed() const
{
    if (m_error) Throw(*m_error);
}

std::unique_ptr<CoinCursor> CoinCursor::Make(const CoinsDB& db)
{
    return VisitPolicy(db.policy(), [&]<typename P>(P) -> std::unique_ptr<CoinCursor> {
        return std::make_unique<CursorImpl<P>>(db.store());
    });
}

void CountCoins(CoinCursor& cur, UtxoStats& s)
{
    OutPoint op, last;
    Coin c;
    bool first = true;
    while (cur.Next(op, c)) {
        ++s.txouts;
        if (first || !(op.hash == last.hash)) ++s.transactions;
        first = false;
        last = op;
        s.bogosize += GetBogoSize(c.out.script_pubkey);
        s.total_amount += c.out.value;
        if (c.height > s.height) s.height = c.height;
    }
    cur.ThrowIfFailed();
}

void FillBatch(CoinCursor& cur, AddressNetwork net, std::size_t max_rows, bool script_hex, ArrowColumns& c)
{
    c.txid_data.reserve(max_rows * 64);
    c.txid_offsets.reserve((max_rows + 1) * 4);
    c.vout.reserve(max_rows * 4);
    c.height.reserve(max_rows * 4);
    c.amount.reserve(max_rows * 8);
    c.type_offsets.reserve((max_rows + 1) * 4);
    c.addr_offsets.reserve((max_rows + 1) * 4);
    c.script_offsets.reserve((max_rows + 1) * 4);
    c.type_data.reserve(max_rows * 20);
    c.addr_data.reserve(max_rows * 44);
    c.script_data.reserve(max_rows * (script_hex ? 70 : 35));
    c.coinbase_bits.reserve(max_rows / 8 + 1);
    c.addr_valid.reserve(max_rows / 8 + 1);
    AppendOffset(c.txid_offsets, 0);
    AppendOffset(c.type_offsets, 0);
    AppendOffset(c.addr_offsets, 0);
    AppendOffset(c.script_offsets, 0);
    OutPoint op;
    Coin coin;
    Txid last;
    while (c.rows < max_rows && cur.Next(op, coin)) {
        const std::size_t i = c.rows++;
        if (i > 0 && op.hash == last) { // outputs of one transaction are adjacent: reuse its hex
            const std::size_t at = c.txid_data.size();
            c.txid_data.resize(at + 64);
            std::memcpy(c.txid_data.data() + at, c.txid_data.data() + at - 64, 64);
        } else {
            AppendDisplayHex(c.txid_data, op.hash.data());
            last = op.hash;
        }
        AppendOffset(c.txid_offsets, c.txid_data.size());
        AppendLE<uint32_t>(c.vout, op.n);
        AppendLE<uint32_t>(c.height, coin.height);
        SetBit(c.coinbase_bits, i, coin.coinbase);
        AppendLE<int64_t>(c.amount, coin.out.value);
        const Script& s = coin.out.script_pubkey;
        c.type_data.append(GetTxnOutputType(Solver(s.span())));
        AppendOffset(c.type_offsets, c.type_data.size());
        const auto addr = EncodeAddress(s, net);
        SetBit(c.addr_valid, i, addr.has_value());
        if (addr) c.addr_data.append(*addr);
        else ++c.addr_nulls;
        AppendOffset(c.addr_offsets, c.addr_data.size());
        if (script_hex) {
            for (uint8_t b : s.span()) {
                c.script_data.push_back(HEX[b >> 4]);
                c.script_data.push_back(HEX[b & 15]);
            }
        } else {
            c.script_data.append(reinterpret_cast<const char*>(s.data()), s.size());
        }
        AppendOffset(c.script_offsets, c.script_data.size());
    }
}

} // namespace ibdkit::py
