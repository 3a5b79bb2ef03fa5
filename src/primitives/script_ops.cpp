#include <ibdkit/encoding/hex.h>
#include <ibdkit/primitives/script_ops.h>

#include <ibdkit/encoding/endian.h>
#include <ibdkit/primitives/consensus_constants.h>

#include <string>

namespace ibdkit {

namespace {
/// Core's GetScriptOp, inlinable into the hot loops below.
inline bool ReadScriptOpInline(const uint8_t*& pc, const uint8_t* end, uint8_t& opcode, std::span<const uint8_t>* data) noexcept
{
    opcode = OP_INVALIDOPCODE;
    if (data) *data = {};
    if (pc >= end) return false;
    const uint8_t op = *pc++;
    if (op <= OP_PUSHDATA4) {
        uint32_t size = 0;
        if (op < OP_PUSHDATA1) {
            size = op;
        } else if (op == OP_PUSHDATA1) {
            if (end - pc < 1) return false;
            size = *pc++;
        } else if (op == OP_PUSHDATA2) {
            if (end - pc < 2) return false;
            size = LoadLE<uint16_t>(pc);
            pc += 2;
        } else {
            if (end - pc < 4) return false;
            size = LoadLE<uint32_t>(pc);
            pc += 4;
        }
        if (uint64_t(end - pc) < size) return false;
        if (data) *data = {pc, size};
        pc += size;
    }
    opcode = op;
    return true;
}
} // namespace

bool GetScriptOp(const uint8_t*& pc, const uint8_t* end, uint8_t& opcode, std::span<const uint8_t>* data) noexcept
{
    return ReadScriptOpInline(pc, end, opcode, data);
}

unsigned GetSigOpCount(std::span<const uint8_t> script, bool accurate) noexcept
{
    // The common output templates, whose opcode walk has a known result: P2PKH has one
    // OP_CHECKSIG; P2SH, P2WPKH, P2WSH and P2TR have none (their hashes are skipped pushes).
    const uint8_t* s = script.data();
    switch (script.size()) {
    case 25:
        if (s[0] == OP_DUP && s[1] == OP_HASH160 && s[2] == 20 && s[23] == OP_EQUALVERIFY && s[24] == OP_CHECKSIG) return 1;
        break;
    case 23:
        if (s[0] == OP_HASH160 && s[1] == 20 && s[22] == OP_EQUAL) return 0;
        break;
    case 22:
        if (s[0] == OP_0 && s[1] == 20) return 0;
        break;
    case 34:
        if ((s[0] == OP_0 || s[0] == OP_1) && s[1] == 32) return 0;
        break;
    default: break;
    }
    unsigned n = 0;
    const uint8_t* pc = script.data();
    const uint8_t* end = pc + script.size();
    uint8_t last = OP_INVALIDOPCODE;
    while (pc < end) {
        uint8_t op;
        if (!ReadScriptOpInline(pc, end, op, nullptr)) break;
        if (op == OP_CHECKSIG || op == OP_CHECKSIGVERIFY) {
            n++;
        } else if (op == OP_CHECKMULTISIG || op == OP_CHECKMULTISIGVERIFY) {
            if (accurate && last >= OP_1 && last <= OP_16) {
                n += unsigned(last - (OP_1 - 1));
            } else {
                n += MAX_PUBKEYS_PER_MULTISIG;
            }
        }
        last = op;
    }
    return n;
}

bool IsPushOnly(std::span<const uint8_t> script) noexcept
{
    const uint8_t* pc = script.data();
    const uint8_t* end = pc + script.size();
    while (pc < end) {
        uint8_t op;
        if (!GetScriptOp(pc, end, op)) return false;
        if (op > OP_16) return false;
    }
    return true;
}

bool IsPayToScriptHash(std::span<const uint8_t> s) noexcept
{
    return s.size() == 23 && s[0] == OP_HASH160 && s[1] == 0x14 && s[22] == OP_EQUAL;
}

bool IsWitnessProgram(std::span<const uint8_t> s, int& version, std::span<const uint8_t>& program) noexcept
{
    if (s.size() < 4 || s.size() > 42) return false;
    if (s[0] != OP_0 && (s[0] < OP_1 || s[0] > OP_16)) return false;
    if (std::size_t(s[1]) + 2 == s.size()) {
        version = s[0] == OP_0 ? 0 : s[0] - (OP_1 - 1);
        program = s.subspan(2);
        return true;
    }
    return false;
}

namespace {
bool IsValidPubKeySize(std::span<const uint8_t> d) noexcept
{
    if (d.empty()) return false;
    const uint8_t h = d[0];
    if (h == 2 || h == 3) return d.size() == 33;
    if (h == 4 || h == 6 || h == 7) return d.size() == 65;
    return false;
}

bool IsMultisig(std::span<const uint8_t> s) noexcept
{
    // OP_m <pubkey>... OP_n OP_CHECKMULTISIG, 1 <= m <= n <= 16, n keys.
    if (s.size() < 1 || s.back() != OP_CHECKMULTISIG) return false;
    const uint8_t* pc = s.data();
    const uint8_t* end = pc + s.size();
    uint8_t op;
    std::span<const uint8_t> d;
    if (!GetScriptOp(pc, end, op, &d)) return false;
    if (op < OP_1 || op > OP_16) return false;
    const int m = op - (OP_1 - 1);
    int keys = 0;
    while (true) {
        if (!GetScriptOp(pc, end, op, &d)) return false;
        if (op <= OP_PUSHDATA4 && IsValidPubKeySize(d)) {
            ++keys;
            continue;
        }
        break;
    }
    if (op < OP_1 || op > OP_16) return false;
    const int n = op - (OP_1 - 1);
    if (keys != n || m > n) return false;
    return pc + 1 == end;
}
} // namespace

TxoutType Solver(std::span<const uint8_t> s) noexcept
{
    if (IsPayToScriptHash(s)) return TxoutType::SCRIPTHASH;
    int version = 0;
    std::span<const uint8_t> program;
    if (IsWitnessProgram(s, version, program)) {
        if (version == 0 && program.size() == 20) return TxoutType::WITNESS_V0_KEYHASH;
        if (version == 0 && program.size() == 32) return TxoutType::WITNESS_V0_SCRIPTHASH;
        if (version == 1 && program.size() == 32) return TxoutType::WITNESS_V1_TAPROOT;
        if (version == 1 && program.size() == 2 && program[0] == 0x4e && program[1] == 0x73) return TxoutType::ANCHOR;
        if (version != 0) return TxoutType::WITNESS_UNKNOWN;
        return TxoutType::NONSTANDARD;
    }
    if (!s.empty() && s[0] == OP_RETURN && IsPushOnly(s.subspan(1))) return TxoutType::NULL_DATA;
    if ((s.size() == 35 && s[0] == 33 && s[34] == OP_CHECKSIG && IsValidPubKeySize(s.subspan(1, 33))) ||
        (s.size() == 67 && s[0] == 65 && s[66] == OP_CHECKSIG && IsValidPubKeySize(s.subspan(1, 65)))) {
        return TxoutType::PUBKEY;
    }
    if (s.size() == 25 && s[0] == OP_DUP && s[1] == OP_HASH160 && s[2] == 20 && s[23] == OP_EQUALVERIFY && s[24] == OP_CHECKSIG) {
        return TxoutType::PUBKEYHASH;
    }
    if (IsMultisig(s)) return TxoutType::MULTISIG;
    return TxoutType::NONSTANDARD;
}

std::string_view GetTxnOutputType(TxoutType t) noexcept
{
    switch (t) {
    case TxoutType::NONSTANDARD: return "nonstandard";
    case TxoutType::ANCHOR: return "anchor";
    case TxoutType::PUBKEY: return "pubkey";
    case TxoutType::PUBKEYHASH: return "pubkeyhash";
    case TxoutType::SCRIPTHASH: return "scripthash";
    case TxoutType::MULTISIG: return "multisig";
    case TxoutType::NULL_DATA: return "nulldata";
    case TxoutType::WITNESS_V0_KEYHASH: return "witness_v0_keyhash";
    case TxoutType::WITNESS_V0_SCRIPTHASH: return "witness_v0_scripthash";
    case TxoutType::WITNESS_V1_TAPROOT: return "witness_v1_taproot";
    case TxoutType::WITNESS_UNKNOWN: return "witness_unknown";
    }
    return "nonstandard";
}

Script ScriptForHeight(int64_t n)
{
    Script s;
    if (n == -1 || (n >= 1 && n <= 16)) {
        s.push_back(uint8_t(n + (OP_1 - 1)));
    } else if (n == 0) {
        s.push_back(OP_0);
    } else {
        // CScriptNum::serialize: little-endian magnitude, sign in the top bit of the last byte.
        uint8_t buf[9];
        std::size_t len = 0;
        const bool neg = n < 0;
        uint64_t absvalue = neg ? ~uint64_t(n) + 1 : uint64_t(n);
        while (absvalue) {
            buf[len++] = uint8_t(absvalue & 0xff);
            absvalue >>= 8;
        }
        if (buf[len - 1] & 0x80) {
            buf[len++] = neg ? 0x80 : 0;
        } else if (neg) {
            buf[len - 1] |= 0x80;
        }
        s.push_back(uint8_t(len));
        s.append(std::span<const uint8_t>(buf, len));
    }
    return s;
}

std::optional<int64_t> DecodeCoinbaseHeight(std::span<const uint8_t> s) noexcept
{
    if (s.empty()) return std::nullopt;
    const uint8_t op = s[0];
    if (op == OP_0) return 0;
    if (op == OP_1NEGATE) return -1;
    if (op >= OP_1 && op <= OP_16) return int64_t(op - (OP_1 - 1));
    if (op < 1 || op > 8 || s.size() < std::size_t(1 + op)) return std::nullopt;
    uint64_t v = 0;
    for (int i = 0; i < op; ++i) v |= uint64_t(s[1 + i]) << (8 * i);
    // Only accept the minimal encoding Core writes (ScriptForHeight), so the round trip holds.
    const uint8_t last = s[op];
    if (last & 0x80) {
        v &= ~(uint64_t(0x80) << (8 * (op - 1)));
        const int64_t r = -int64_t(v);
        if (ScriptForHeight(r).span().size() != std::size_t(op + 1)) return std::nullopt;
        return r;
    }
    const int64_t r = int64_t(v);
    const Script expect = ScriptForHeight(r);
    if (expect.size() != std::size_t(op + 1)) return std::nullopt;
    return r;
}

namespace {
const char* OpName(uint8_t op)
{
    static const char* const NAMES[256] = {
        // 0x00
        "0", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr,
        // 0x4c
        "OP_PUSHDATA1", "OP_PUSHDATA2", "OP_PUSHDATA4", "-1", "OP_RESERVED", "1", "2", "3", "4", "5", "6", "7", "8",
        "9", "10", "11", "12", "13", "14", "15", "16",
        // 0x61
        "OP_NOP", "OP_VER", "OP_IF", "OP_NOTIF", "OP_VERIF", "OP_VERNOTIF", "OP_ELSE", "OP_ENDIF", "OP_VERIFY",
        "OP_RETURN",
        // 0x6b
        "OP_TOALTSTACK", "OP_FROMALTSTACK", "OP_2DROP", "OP_2DUP", "OP_3DUP", "OP_2OVER", "OP_2ROT", "OP_2SWAP",
        "OP_IFDUP", "OP_DEPTH", "OP_DROP", "OP_DUP", "OP_NIP", "OP_OVER", "OP_PICK", "OP_ROLL", "OP_ROT", "OP_SWAP",
        "OP_TUCK",
        // 0x7e
        "OP_CAT", "OP_SUBSTR", "OP_LEFT", "OP_RIGHT", "OP_SIZE",
        // 0x83
        "OP_INVERT", "OP_AND", "OP_OR", "OP_XOR", "OP_EQUAL", "OP_EQUALVERIFY", "OP_RESERVED1", "OP_RESERVED2",
        // 0x8b
        "OP_1ADD", "OP_1SUB", "OP_2MUL", "OP_2DIV", "OP_NEGATE", "OP_ABS", "OP_NOT", "OP_0NOTEQUAL", "OP_ADD",
        "OP_SUB", "OP_MUL", "OP_DIV", "OP_MOD", "OP_LSHIFT", "OP_RSHIFT", "OP_BOOLAND", "OP_BOOLOR", "OP_NUMEQUAL",
        "OP_NUMEQUALVERIFY", "OP_NUMNOTEQUAL", "OP_LESSTHAN", "OP_GREATERTHAN", "OP_LESSTHANOREQUAL",
        "OP_GREATERTHANOREQUAL", "OP_MIN", "OP_MAX", "OP_WITHIN",
        // 0xa6
        "OP_RIPEMD160", "OP_SHA1", "OP_SHA256", "OP_HASH160", "OP_HASH256", "OP_CODESEPARATOR", "OP_CHECKSIG",
        "OP_CHECKSIGVERIFY", "OP_CHECKMULTISIG", "OP_CHECKMULTISIGVERIFY",
        // 0xb0
        "OP_NOP1", "OP_CHECKLOCKTIMEVERIFY", "OP_CHECKSEQUENCEVERIFY", "OP_NOP4", "OP_NOP5", "OP_NOP6", "OP_NOP7",
        "OP_NOP8", "OP_NOP9", "OP_NOP10",
        // 0xba
        "OP_CHECKSIGADD"};
    const char* n = NAMES[op];
    return n ? n : "OP_UNKNOWN";
}

} // namespace

std::string ScriptToAsmStr(std::span<const uint8_t> script)
{
    std::string str;
    const uint8_t* pc = script.data();
    const uint8_t* end = pc + script.size();
    while (pc < end) {
        if (!str.empty()) str += ' ';
        uint8_t op;
        std::span<const uint8_t> d;
        if (!GetScriptOp(pc, end, op, &d)) {
            str += "[error]";
            return str;
        }
        if (op <= OP_PUSHDATA4) {
            if (d.size() <= 4) {
                // CScriptNum(vch, false).getint()
                int64_t v = 0;
                for (std::size_t i = 0; i < d.size(); ++i) v |= int64_t(d[i]) << (8 * i);
                if (!d.empty() && (d.back() & 0x80)) v = -(v & ~(int64_t(0x80) << (8 * (d.size() - 1))));
                str += std::to_string(v);
            } else {
                str += HexStr(d);
            }
        } else {
            str += OpName(op);
        }
    }
    return str;
}

} // namespace ibdkit
