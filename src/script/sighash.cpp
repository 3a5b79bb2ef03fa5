// src/script/sighash.cpp — the messages signatures commit to (legacy, BIP143, BIP341/342) and the
// per-transaction hashes they share. The rules are Core's (script/interpreter.cpp); the comments
// say where an old quirk is kept on purpose.
#include "script/sighash.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/script_ops.h>

#include <cassert>
#include <cstring>
#include <string_view>

namespace ibdkit {

namespace {

constexpr uint8_t OP_CODESEPARATOR = 0xab;

// SHA-256 as a serialization stream: whatever Serialize writes is hashed, nothing is buffered.
class HashStream {
public:
    HashStream() = default;
    explicit HashStream(const Sha256& state) noexcept : m_sha(state) {}
    const Sha256& State() const noexcept { return m_sha; }
    void write(std::span<const std::byte> bytes) noexcept { m_sha.Write(bytes); }
    void write(std::span<const uint8_t> bytes) noexcept { m_sha.Write(bytes); }

    template <typename T>
    HashStream& operator<<(const T& value)
    {
        Serialize(*this, value);
        return *this;
    }

    uint256 Single() noexcept
    {
        uint256 out;
        m_sha.Finalize(out.data());
        return out;
    }
    uint256 Double() noexcept
    {
        uint256 once = Single();
        uint256 out;
        Sha256().Write(once.data(), once.size()).Finalize(out.data());
        return out;
    }

    // BIP340's tagged hash starts with SHA256(tag) twice; the stream after those 64 bytes is kept
    // and copied for each message (one compression saved per hash).
    static HashStream Tagged(std::string_view tag) noexcept
    {
        uint8_t tag_hash[32];
        Sha256().Write(reinterpret_cast<const uint8_t*>(tag.data()), tag.size()).Finalize(tag_hash);
        HashStream s;
        s.m_sha.Write(tag_hash, 32).Write(tag_hash, 32);
        return s;
    }

private:
    Sha256 m_sha;
};

uint256 Sha256Of(const uint256& h) noexcept
{
    uint256 out;
    Sha256().Write(h.data(), h.size()).Finalize(out.data());
    return out;
}

uint256 PrevoutsSingleHash(const Transaction& tx)
{
    HashStream s;
    for (const TxIn& in : tx.vin()) s << in.prevout;
    return s.Single();
}

uint256 SequencesSingleHash(const Transaction& tx)
{
    HashStream s;
    for (const TxIn& in : tx.vin()) s << in.sequence;
    return s.Single();
}

uint256 OutputsSingleHash(const Transaction& tx)
{
    HashStream s;
    for (const TxOut& out : tx.vout()) s << out;
    return s.Single();
}

// True for a witness-bearing input that Core's Init takes for a taproot spend: its spent output
// is 34 bytes starting with OP_1. (A P2SH-wrapped or malformed case that looks like this fails
// verification anyway; Core decides on these bytes alone, and so do we.)
bool LooksLikeTaprootSpend(const TxOut& spent) noexcept
{
    return spent.script_pubkey.size() == 34 && spent.script_pubkey[0] == OP_1;
}

// The legacy script code as signed: the script with every OP_CODESEPARATOR dropped. The walk
// stops where GetScriptOp stops (at a truncated push, having advanced past the opcode and any
// length bytes it could read), and, as in Core, the bytes after that point are not written
// although the length prefix counts them: a malformed script hashes to what Core hashes.
void WriteLegacyScriptCode(HashStream& s, std::span<const uint8_t> script)
{
    const uint8_t* const begin = script.data();
    const uint8_t* const end = begin + script.size();
    std::size_t separators = 0;
    {
        const uint8_t* pc = begin;
        uint8_t op;
        while (GetScriptOp(pc, end, op)) {
            if (op == OP_CODESEPARATOR) ++separators;
        }
    }
    WriteCompactSize(s, script.size() - separators);
    const uint8_t* pc = begin;
    const uint8_t* chunk = begin;
    uint8_t op;
    while (GetScriptOp(pc, end, op)) {
        if (op == OP_CODESEPARATOR) {
            s.write(std::span<const uint8_t>(chunk, std::size_t(pc - 1 - chunk)));
            chunk = pc;
        }
    }
    if (chunk != end) s.write(std::span<const uint8_t>(chunk, std::size_t(pc - chunk)));
}

// An input other than the signed one in the legacy message: its outpoint, an empty script and
// `sequence` (the input's, or 0 under NONE and SINGLE).
constexpr std::size_t EMPTY_SCRIPT_INPUT_SIZE = 41;
void PutEmptyScriptInput(uint8_t* out, const TxIn& in, uint32_t sequence) noexcept
{
    std::memcpy(out, in.prevout.hash.data(), 32);
    for (int k = 0; k < 4; ++k) out[32 + k] = uint8_t(in.prevout.n >> (8 * k));
    out[36] = 0;
    for (int k = 0; k < 4; ++k) out[37 + k] = uint8_t(sequence >> (8 * k));
}

// The original signature hash: a modified copy of the transaction, streamed. Only the input
// being signed keeps a script (the script code); NONE and SINGLE let the other inputs' sequences
// be zero; ANYONECANPAY keeps only the signed input; SINGLE blanks the outputs before the signed
// input's index (value -1, empty script) and drops those after it; NONE drops all outputs.
//
// With `prefix` (PrecomputedTxData::legacy_prefix) a type that serializes every input and output
// as ALL does (neither ANYONECANPAY, NONE nor SINGLE) starts from the state in front of `input`.
uint256 LegacySignatureHash(std::span<const uint8_t> script_code, const Transaction& tx, uint32_t input, int32_t hash_type,
                            std::span<const Sha256> prefix)
{
    const bool anyone_can_pay = (hash_type & SIGHASH_ANYONECANPAY) != 0;
    const bool single = (hash_type & 0x1f) == SIGHASH_SINGLE;
    const bool none = (hash_type & 0x1f) == SIGHASH_NONE;
    const auto vin = tx.vin();
    const auto vout = tx.vout();

    HashStream s;
    std::size_t first = 0;
    const std::size_t n_inputs = anyone_can_pay ? 1 : vin.size();
    if (!anyone_can_pay && !single && !none && prefix.size() == vin.size()) {
        s = HashStream(prefix[input]);
        first = input;
    } else {
        s << tx.version();
        WriteCompactSize(s, n_inputs);
    }
    // The other inputs are hashed in batches of records rather than field by field.
    constexpr std::size_t BATCH = 24;
    uint8_t batch[EMPTY_SCRIPT_INPUT_SIZE * BATCH];
    std::size_t queued = 0;
    auto flush = [&] {
        s.write(std::span<const uint8_t>(batch, queued * EMPTY_SCRIPT_INPUT_SIZE));
        queued = 0;
    };
    for (std::size_t i = first; i < n_inputs; ++i) {
        const std::size_t which = anyone_can_pay ? input : i;
        const TxIn& in = vin[which];
        if (which == input) {
            flush();
            s << in.prevout;
            WriteLegacyScriptCode(s, script_code);
            s << in.sequence;
            continue;
        }
        PutEmptyScriptInput(batch + queued * EMPTY_SCRIPT_INPUT_SIZE, in, single || none ? 0 : in.sequence);
        if (++queued == BATCH) flush();
    }
    flush();
    const std::size_t n_outputs = none ? 0 : single ? std::size_t(input) + 1 : vout.size();
    WriteCompactSize(s, n_outputs);
    for (std::size_t o = 0; o < n_outputs; ++o) {
        if (single && o != input) {
            s << TxOut{};
        } else {
            s << vout[o];
        }
    }
    s << tx.lock_time();
    s << hash_type;
    return s.Double();
}

// BIP143: the shared parts enter as hashes, so hashing every input costs O(inputs) in all.
uint256 WitnessV0SignatureHash(std::span<const uint8_t> script_code, const Transaction& tx, uint32_t input, int32_t hash_type,
                               Amount amount, const PrecomputedTxData* txdata)
{
    const bool anyone_can_pay = (hash_type & SIGHASH_ANYONECANPAY) != 0;
    const int base_type = hash_type & 0x1f;
    const bool single_or_none = base_type == SIGHASH_SINGLE || base_type == SIGHASH_NONE;
    const bool cached = txdata != nullptr && txdata->bip143_segwit_ready;

    uint256 hash_prevouts, hash_sequence, hash_outputs; // zero where the type leaves them out
    if (!anyone_can_pay) {
        hash_prevouts = cached ? txdata->hash_prevouts : Sha256Of(PrevoutsSingleHash(tx));
    }
    if (!anyone_can_pay && !single_or_none) {
        hash_sequence = cached ? txdata->hash_sequence : Sha256Of(SequencesSingleHash(tx));
    }
    if (!single_or_none) {
        hash_outputs = cached ? txdata->hash_outputs : Sha256Of(OutputsSingleHash(tx));
    } else if (base_type == SIGHASH_SINGLE && input < tx.vout().size()) {
        HashStream one;
        one << tx.vout()[input];
        hash_outputs = one.Double();
    }

    const TxIn& in = tx.vin()[input];
    HashStream s;
    if (cached && !anyone_can_pay && !single_or_none) {
        s = HashStream(txdata->bip143_all_prefix);
    } else {
        s << tx.version() << hash_prevouts << hash_sequence;
    }
    s << in.prevout;
    WriteCompactSize(s, script_code.size());
    s.write(script_code);
    s << amount << in.sequence << hash_outputs << tx.lock_time() << hash_type;
    return s.Double();
}

} // namespace

uint256 SignatureHash(std::span<const uint8_t> script_code, const Transaction& tx, uint32_t input, int32_t hash_type,
                      Amount amount, SigVersion sigversion, const PrecomputedTxData* txdata)
{
    assert(input < tx.vin().size());
    if (sigversion == SigVersion::WITNESS_V0) {
        return WitnessV0SignatureHash(script_code, tx, input, hash_type, amount, txdata);
    }
    // Legacy SIGHASH_SINGLE without an output at the input's index: Core's original code returned
    // the number one as "the hash" (an error value it never checked), and a signature over that
    // constant is valid for any such input. Consensus keeps it.
    if ((hash_type & 0x1f) == SIGHASH_SINGLE && input >= tx.vout().size()) {
        uint256 one;
        one.data()[0] = 1;
        return one;
    }
    return LegacySignatureHash(script_code, tx, input, hash_type,
                               txdata != nullptr ? std::span<const Sha256>(txdata->legacy_prefix) : std::span<const Sha256>());
}

namespace {

// BIP341's message up to its per-input part: the TapSighash tag, epoch 0, the hash type, version
// and lock time, then the transaction-wide hashes the type signs.
HashStream BeginTapSighash(const Transaction& tx, uint8_t hash_type, const PrecomputedTxData& txdata)
{
    static const HashStream TAP_SIGHASH = HashStream::Tagged("TapSighash");
    const uint8_t output_type = hash_type == SIGHASH_DEFAULT ? SIGHASH_ALL : (hash_type & SIGHASH_OUTPUT_MASK);
    const bool anyone_can_pay = (hash_type & SIGHASH_INPUT_MASK) == SIGHASH_ANYONECANPAY;
    HashStream s = TAP_SIGHASH;
    s << uint8_t{0} /* epoch */ << hash_type << tx.version() << tx.lock_time();
    if (!anyone_can_pay) {
        s << txdata.prevouts_single_hash << txdata.spent_amounts_single_hash << txdata.spent_scripts_single_hash
          << txdata.sequences_single_hash;
    }
    if (output_type == SIGHASH_ALL) s << txdata.outputs_single_hash;
    return s;
}

} // namespace

bool SignatureHashSchnorr(uint256& out, const ScriptExecutionData& execdata, const Transaction& tx, uint32_t input,
                          uint8_t hash_type, SigVersion sigversion, const PrecomputedTxData& txdata)
{
    assert(sigversion == SigVersion::TAPROOT || sigversion == SigVersion::TAPSCRIPT);
    assert(input < tx.vin().size());
    if (!(txdata.bip341_taproot_ready && txdata.spent_outputs_ready)) return false;
    // Only the defined types: DEFAULT, ALL, NONE, SINGLE, each with or without ANYONECANPAY
    // (DEFAULT excepted).
    if (!(hash_type <= 0x03 || (hash_type >= 0x81 && hash_type <= 0x83))) return false;

    const uint8_t output_type = hash_type == SIGHASH_DEFAULT ? SIGHASH_ALL : (hash_type & SIGHASH_OUTPUT_MASK);
    const bool anyone_can_pay = (hash_type & SIGHASH_INPUT_MASK) == SIGHASH_ANYONECANPAY;
    const uint8_t ext_flag = sigversion == SigVersion::TAPSCRIPT ? 1 : 0;

    HashStream s;
    if (hash_type == SIGHASH_DEFAULT && txdata.bip341_default_prefix_ready) {
        s = HashStream(txdata.bip341_default_prefix);
    } else {
        s = BeginTapSighash(tx, hash_type, txdata);
    }

    assert(execdata.annex_init);
    const uint8_t spend_type = uint8_t((ext_flag << 1) | (execdata.annex_present ? 1 : 0));
    s << spend_type;
    if (anyone_can_pay) {
        const TxIn& in = tx.vin()[input];
        s << in.prevout << txdata.spent_outputs[input] << in.sequence;
    } else {
        s << input;
    }
    if (execdata.annex_present) s << execdata.annex_hash;

    if (output_type == SIGHASH_SINGLE) {
        if (input >= tx.vout().size()) return false;
        HashStream one;
        one << tx.vout()[input];
        s << one.Single();
    }

    if (sigversion == SigVersion::TAPSCRIPT) {
        assert(execdata.tapleaf_hash_init && execdata.codeseparator_pos_init);
        constexpr uint8_t KEY_VERSION = 0; // BIP342's 32-byte keys
        s << execdata.tapleaf_hash << KEY_VERSION << execdata.codeseparator_pos;
    }
    out = s.Single();
    return true;
}

void PrecomputedTxData::Init(const Transaction& tx, std::vector<TxOut> spent, bool force)
{
    // The engine reuses one object per transaction slot from block to block: nothing of the last
    // transaction's may count as ready for this one.
    spent_outputs_ready = bip143_segwit_ready = bip341_taproot_ready = bip341_default_prefix_ready = false;
    spent_outputs = std::move(spent);
    if (!spent_outputs.empty()) {
        assert(spent_outputs.size() == tx.vin().size());
        spent_outputs_ready = true;
    }

    // Which hash sets the inputs can need, decided as Core decides it: a witness-bearing input
    // whose spent output looks like taproot needs BIP341's; every other witness-bearing input
    // (unknown versions and P2SH-wrapped segwit included, since telling them apart would mean
    // evaluating the scriptSig) needs BIP143's. Inputs without a witness need neither.
    bool need_bip143 = force;
    bool need_bip341 = force;
    const auto vin = tx.vin();
    for (std::size_t i = 0; i < vin.size() && !(need_bip143 && need_bip341); ++i) {
        if (vin[i].witness.IsNull()) continue;
        if (spent_outputs_ready && LooksLikeTaprootSpend(spent_outputs[i])) {
            need_bip341 = true;
        } else {
            need_bip143 = true;
        }
    }

    // The legacy prefixes: one pass over the inputs, repaid by the second legacy signature.
    std::size_t legacy_inputs = 0;
    for (const TxIn& in : vin) legacy_inputs += in.witness.IsNull();
    const bool make_prefixes = legacy_inputs >= 2 || (force && !vin.empty());
    // A reused object keeps its room for states, but never more than twice what this transaction
    // needs: an earlier, larger transaction's memory is given back.
    if (legacy_prefix.capacity() > 2 * (make_prefixes ? vin.size() : 0)) legacy_prefix = std::vector<Sha256>();
    legacy_prefix.clear();
    if (make_prefixes) {
        legacy_prefix.reserve(vin.size());
        HashStream s;
        s << tx.version();
        WriteCompactSize(s, vin.size());
        uint8_t record[EMPTY_SCRIPT_INPUT_SIZE];
        for (const TxIn& in : vin) {
            legacy_prefix.push_back(s.State());
            PutEmptyScriptInput(record, in, in.sequence);
            s.write(std::span<const uint8_t>(record, sizeof(record)));
        }
    }

    if (need_bip143 || need_bip341) {
        prevouts_single_hash = PrevoutsSingleHash(tx);
        sequences_single_hash = SequencesSingleHash(tx);
        outputs_single_hash = OutputsSingleHash(tx);
    }
    if (need_bip143) {
        hash_prevouts = Sha256Of(prevouts_single_hash);
        hash_sequence = Sha256Of(sequences_single_hash);
        hash_outputs = Sha256Of(outputs_single_hash);
        HashStream prefix;
        prefix << tx.version() << hash_prevouts << hash_sequence;
        bip143_all_prefix = prefix.State();
        bip143_segwit_ready = true;
    }
    if (need_bip341 && spent_outputs_ready) {
        HashStream amounts, scripts;
        for (const TxOut& out : spent_outputs) {
            amounts << out.value;
            scripts << out.script_pubkey;
        }
        spent_amounts_single_hash = amounts.Single();
        spent_scripts_single_hash = scripts.Single();
        bip341_taproot_ready = true;
        // SIGHASH_DEFAULT messages share everything before their per-input part: one state,
        // worth making when two or more inputs may sign with it.
        std::size_t taproot_inputs = 0;
        for (std::size_t i = 0; i < vin.size(); ++i) {
            taproot_inputs += !vin[i].witness.IsNull() && LooksLikeTaprootSpend(spent_outputs[i]);
        }
        if (taproot_inputs >= 2 || force) {
            bip341_default_prefix = BeginTapSighash(tx, SIGHASH_DEFAULT, *this).State();
            bip341_default_prefix_ready = true;
        }
    }
}

} // namespace ibdkit
