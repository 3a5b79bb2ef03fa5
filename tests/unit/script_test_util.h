// Helpers for the script tests: Core's script assembly notation (core_read.cpp's ParseScript, as
// the vector files write scripts) and the crediting/spending pair of Core's script_tests.cpp.
#pragma once

#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/primitives/transaction.h>

#include "test_util.h"

#include <cctype>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ibdkit::test {

/// The names ParseScript knows: OP_RESERVED and OP_NOP..OP_NOP10, with and without "OP_".
inline const std::map<std::string, uint8_t>& OpcodeNames()
{
    static const std::map<std::string, uint8_t> names = [] {
        static const char* const from_nop[] = {
            "NOP", "VER", "IF", "NOTIF", "VERIF", "VERNOTIF", "ELSE", "ENDIF", "VERIFY", "RETURN",
            "TOALTSTACK", "FROMALTSTACK", "2DROP", "2DUP", "3DUP", "2OVER", "2ROT", "2SWAP", "IFDUP", "DEPTH",
            "DROP", "DUP", "NIP", "OVER", "PICK", "ROLL", "ROT", "SWAP", "TUCK", "CAT",
            "SUBSTR", "LEFT", "RIGHT", "SIZE", "INVERT", "AND", "OR", "XOR", "EQUAL", "EQUALVERIFY",
            "RESERVED1", "RESERVED2", "1ADD", "1SUB", "2MUL", "2DIV", "NEGATE", "ABS", "NOT", "0NOTEQUAL",
            "ADD", "SUB", "MUL", "DIV", "MOD", "LSHIFT", "RSHIFT", "BOOLAND", "BOOLOR", "NUMEQUAL",
            "NUMEQUALVERIFY", "NUMNOTEQUAL", "LESSTHAN", "GREATERTHAN", "LESSTHANOREQUAL", "GREATERTHANOREQUAL",
            "MIN", "MAX", "WITHIN", "RIPEMD160", "SHA1", "SHA256", "HASH160", "HASH256", "CODESEPARATOR",
            "CHECKSIG", "CHECKSIGVERIFY", "CHECKMULTISIG", "CHECKMULTISIGVERIFY", "NOP1", "CHECKLOCKTIMEVERIFY",
            "CHECKSEQUENCEVERIFY", "NOP4", "NOP5", "NOP6", "NOP7", "NOP8", "NOP9", "NOP10"};
        std::map<std::string, uint8_t> m;
        auto add = [&m](const std::string& name, uint8_t op) {
            m[name] = op;
            m["OP_" + name] = op;
        };
        add("RESERVED", 0x50);
        for (std::size_t i = 0; i < std::size(from_nop); ++i) add(from_nop[i], uint8_t(0x61 + i));
        return m;
    }();
    return names;
}

/// `CScript() << data`: the shortest PUSHDATA form (no OP_N for one small byte).
inline void AppendPush(std::vector<uint8_t>& s, const std::vector<uint8_t>& data)
{
    const std::size_t n = data.size();
    if (n < 0x4c) {
        s.push_back(uint8_t(n));
    } else if (n <= 0xff) {
        s.push_back(0x4c);
        s.push_back(uint8_t(n));
    } else if (n <= 0xffff) {
        s.push_back(0x4d);
        s.push_back(uint8_t(n));
        s.push_back(uint8_t(n >> 8));
    } else {
        s.push_back(0x4e);
        for (int i = 0; i < 4; ++i) s.push_back(uint8_t(n >> (8 * i)));
    }
    s.insert(s.end(), data.begin(), data.end());
}

/// `CScript() << n` for an integer: OP_0, OP_1NEGATE, OP_1..OP_16, or the push of its CScriptNum.
inline void AppendNumber(std::vector<uint8_t>& s, int64_t n)
{
    if (n == 0) {
        s.push_back(0x00);
    } else if (n == -1 || (n >= 1 && n <= 16)) {
        s.push_back(uint8_t(n + 0x50));
    } else {
        std::vector<uint8_t> bytes;
        const bool negative = n < 0;
        uint64_t m = negative ? 0 - uint64_t(n) : uint64_t(n);
        while (m) {
            bytes.push_back(uint8_t(m));
            m >>= 8;
        }
        if (bytes.back() & 0x80) {
            bytes.push_back(negative ? 0x80 : 0x00);
        } else if (negative) {
            bytes.back() |= 0x80;
        }
        AppendPush(s, bytes);
    }
}

/// Core's ParseScript: decimal numbers (pushed as numbers), 0x-prefixed hex (inserted raw),
/// 'quoted strings' (pushed), opcode names with or without OP_. Throws on anything else.
inline std::vector<uint8_t> ParseScriptAsm(const std::string& text)
{
    std::vector<uint8_t> out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
        std::size_t j = i;
        while (j < text.size() && text[j] != ' ' && text[j] != '\t' && text[j] != '\n') ++j;
        if (j == i) break;
        const std::string w = text.substr(i, j - i);
        i = j;
        auto all_digits = [](const std::string& s, std::size_t from) {
            if (from >= s.size()) return false;
            for (std::size_t k = from; k < s.size(); ++k) {
                if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
            }
            return true;
        };
        if (all_digits(w, 0) || (w[0] == '-' && all_digits(w, 1))) {
            const int64_t n = std::stoll(w);
            if (n > int64_t{0xffffffff} || n < -int64_t{0xffffffff}) throw std::runtime_error("number out of range: " + w);
            AppendNumber(out, n);
        } else if (w.size() > 2 && w[0] == '0' && w[1] == 'x') {
            const std::string hex = w.substr(2);
            if (hex.size() % 2 != 0) throw std::runtime_error("odd hex: " + w);
            for (char c : hex) {
                if (!std::isxdigit(static_cast<unsigned char>(c))) throw std::runtime_error("bad hex: " + w);
            }
            const auto raw = ParseHex(hex);
            out.insert(out.end(), raw.begin(), raw.end());
        } else if (w.size() >= 2 && w.front() == '\'' && w.back() == '\'') {
            AppendPush(out, std::vector<uint8_t>(w.begin() + 1, w.end() - 1));
        } else {
            const auto& names = OpcodeNames();
            const auto it = names.find(w);
            if (it == names.end()) throw std::runtime_error("unknown opcode: " + w);
            out.push_back(it->second);
        }
    }
    return out;
}

/// Core's BuildCreditingTransaction: one null-prevout input (scriptSig 0 0), one output.
inline Transaction BuildCreditingTransaction(const std::vector<uint8_t>& script_pubkey, Amount value)
{
    MutableTransaction tx;
    tx.version = 1;
    tx.lock_time = 0;
    tx.vin.resize(1);
    tx.vin[0].script_sig = Script(std::vector<uint8_t>{0x00, 0x00});
    tx.vin[0].sequence = TxIn::SEQUENCE_FINAL;
    tx.vout.resize(1);
    tx.vout[0].value = value;
    tx.vout[0].script_pubkey = Script(script_pubkey);
    return Transaction(tx);
}

/// Core's BuildSpendingTransaction: spends output 0 of `credit` into one empty-script output.
inline Transaction BuildSpendingTransaction(const std::vector<uint8_t>& script_sig, const ScriptWitness& witness,
                                            const Transaction& credit)
{
    MutableTransaction tx;
    tx.version = 1;
    tx.lock_time = 0;
    tx.vin.resize(1);
    tx.vin[0].prevout.hash = credit.GetHash();
    tx.vin[0].prevout.n = 0;
    tx.vin[0].script_sig = Script(script_sig);
    tx.vin[0].witness = witness;
    tx.vin[0].sequence = TxIn::SEQUENCE_FINAL;
    tx.vout.resize(1);
    tx.vout[0].value = credit.vout()[0].value;
    return Transaction(tx);
}

} // namespace ibdkit::test
