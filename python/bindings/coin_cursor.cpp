// CoinCursor over the chainstate's cursor, counts and Arrow batches (coin_cursor.h).
#include "coin_cursor.h"

#include "errors.h"

#include <ibdkit/primitives/script_ops.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <string_view>

namespace ibdkit::py {
namespace {

/// The chainstate's own cursor (CoinsDB::NewCursor), its failure kept for ThrowIfFailed.
class DbCursor final : public CoinCursor {
public:
    explicit DbCursor(const CoinsDB& db) : m_cursor(db.NewCursor()) {}
    bool Next(OutPoint& op, Coin& coin) override
    {
        if (m_cursor->Next(op, coin)) return true;
        m_error = m_cursor->Failure();
        return false;
    }

private:
    std::unique_ptr<CoinsDB::Cursor> m_cursor;
};

constexpr char HEX[] = "0123456789abcdef";

template <typename T>
void Put(char* at, T v)
{
    std::memcpy(at, &v, sizeof(T)); // x86-64 and every platform Arrow targets are little-endian
}

/// The two hex digits of each byte value, in writing order.
constexpr std::array<std::array<char, 2>, 256> HEX2 = [] {
    std::array<std::array<char, 2>, 256> t{};
    for (int b = 0; b < 256; ++b) t[std::size_t(b)] = {HEX[b >> 4], HEX[b & 15]};
    return t;
}();

void PutDisplayHex(char* p, const uint8_t* internal)
{
    for (int i = 31; i >= 0; --i, p += 2) std::memcpy(p, HEX2[internal[i]].data(), 2);
}

/// Core's TxoutType names, by TxoutType value.
struct TypeName {
    const char* p;
    uint32_t n;
};
std::array<TypeName, 16> TypeNames()
{
    std::array<TypeName, 16> t{};
    for (int i = 0; i <= int(TxoutType::WITNESS_UNKNOWN); ++i) {
        const std::string_view v = GetTxnOutputType(TxoutType(i));
        t[std::size_t(i)] = {v.data(), uint32_t(v.size())};
    }
    return t;
}

} // namespace

void CoinCursor::ThrowIfFailed() const
{
    if (m_error) Throw(*m_error);
}

std::unique_ptr<CoinCursor> CoinCursor::Make(const CoinsDB& db) { return std::make_unique<DbCursor>(db); }

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

void ColumnBuffer::Reserve(std::size_t n, bool zero)
{
    if (n > m_cap) {
        char* p = static_cast<char*>(std::realloc(m_p, n));
        if (!p) throw std::bad_alloc();
        m_p = p;
        m_cap = n;
    }
    if (zero) std::memset(m_p + m_size, 0, m_cap - m_size);
}

void ColumnBuffer::Grow(std::size_t need) { Reserve(std::max(need, m_cap * 2)); }

void ColumnBuffer::Trim()
{
    const std::size_t keep = std::max<std::size_t>(m_size, 1); // never a null buffer for Python
    if (m_p && keep < m_cap) {
        if (char* p = static_cast<char*>(std::realloc(m_p, keep))) { // shrinking: in place or a copy
            m_p = p;
            m_cap = keep;
        }
    }
}

void FillBatch(CoinCursor& cur, AddressNetwork net, std::size_t max_rows, bool script_hex, ArrowColumns& c)
{
    static const std::array<TypeName, 16> TYPE_NAMES = TypeNames();
    // Fixed-width columns are sized for max_rows; variable-width ones for typical values (grown
    // when needed). Every Take below is checked, so no value can overrun its buffer.
    ColumnBuffer &txid_off = c.txid_offsets, &txid = c.txid_data, &vout = c.vout, &height = c.height,
                 &value = c.value, &type_off = c.type_offsets, &type = c.type_data, &addr_off = c.addr_offsets,
                 &addr = c.addr_data, &script_off = c.script_offsets, &script = c.script_data;
    for (ColumnBuffer* w : {&txid_off, &type_off, &addr_off, &script_off}) w->Reserve((max_rows + 1) * 4);
    txid.Reserve(max_rows * 64);
    vout.Reserve(max_rows * 4);
    height.Reserve(max_rows * 4);
    value.Reserve(max_rows * 8);
    type.Reserve(max_rows * 12);
    addr.Reserve(max_rows * 48 + MAX_ADDRESS_LENGTH);
    script.Reserve(max_rows * (script_hex ? 70 : 35));
    c.coinbase_bits.Reserve((max_rows + 7) / 8, true);
    c.addr_valid.Reserve((max_rows + 7) / 8, true);
    char* const coinbase_bits = c.coinbase_bits.data();
    char* const addr_valid = c.addr_valid.data();
    for (ColumnBuffer* w : {&txid_off, &type_off, &addr_off, &script_off}) Put<int32_t>(w->Take(4), 0);
    OutPoint op;
    Coin coin;
    Txid last;
    const char* last_hex = nullptr;
    std::size_t i = 0;
    while (i < max_rows && cur.Next(op, coin)) {
        char* t = txid.Take(64);
        if (last_hex && op.hash == last) { // outputs of one transaction are adjacent: reuse its hex
            std::memcpy(t, last_hex, 64);
        } else {
            PutDisplayHex(t, op.hash.data());
            last = op.hash;
        }
        last_hex = t; // valid until txid grows, which it never does (sized for max_rows)
        Put<int32_t>(txid_off.Take(4), int32_t(txid.size()));
        Put<uint32_t>(vout.Take(4), op.n);
        Put<uint32_t>(height.Take(4), coin.height);
        Put<int64_t>(value.Take(8), coin.out.value);
        if (coin.coinbase) coinbase_bits[i / 8] = char(uint8_t(coinbase_bits[i / 8]) | (1u << (i % 8)));

        const Script& s = coin.out.script_pubkey;
        const TxoutType tt = Solver(s.span());
        const TypeName& name = TYPE_NAMES[std::size_t(tt)];
        std::memcpy(type.Take(name.n), name.p, name.n);
        Put<int32_t>(type_off.Take(4), int32_t(type.size()));

        char* a = addr.Take(MAX_ADDRESS_LENGTH);
        const std::size_t an = EncodeAddressInto(s, tt, net, a);
        addr.Unused(MAX_ADDRESS_LENGTH - an);
        if (an) addr_valid[i / 8] = char(uint8_t(addr_valid[i / 8]) | (1u << (i % 8)));
        else ++c.addr_nulls;
        Put<int32_t>(addr_off.Take(4), int32_t(addr.size()));

        if (script_hex) {
            char* p = script.Take(s.size() * 2);
            for (uint8_t b : s.span()) {
                std::memcpy(p, HEX2[b].data(), 2);
                p += 2;
            }
        } else if (s.size() > 0) {
            std::memcpy(script.Take(s.size()), s.data(), s.size());
        }
        Put<int32_t>(script_off.Take(4), int32_t(script.size()));
        ++i;
    }
    c.rows = i;
    c.coinbase_bits.Take((i + 7) / 8);
    c.addr_valid.Take((i + 7) / 8);
    for (ColumnBuffer* w : {&txid_off, &txid, &vout, &height, &value, &type_off, &type, &addr_off, &addr,
                            &script_off, &script, &c.coinbase_bits, &c.addr_valid})
        w->Trim();
}

} // namespace ibdkit::py
