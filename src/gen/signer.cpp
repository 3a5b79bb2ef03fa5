#include "gen/signer.h"

#include "gen/keys.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/script_ops.h>

#include "crypto/ripemd160.h"
#include "script/interpreter.h"
#include "script/sighash.h"

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ibdkit::gen_detail {

namespace {

const secp256k1_context* SignCtx() { return GenContext(); }
void Require(bool ok, const char* what) { RequireSecp(ok, what); }

constexpr std::size_t ECDSA_PLACEHOLDER = 72 + 1; // largest low-S DER signature + hash type
constexpr std::size_t SCHNORR_SIZE = 64;          // SIGHASH_DEFAULT: no hash-type byte
constexpr uint8_t OP_CHECKSIG_ = 0xac;

std::vector<uint8_t> Push(std::span<const uint8_t> data)
{
    std::vector<uint8_t> out;
    out.reserve(data.size() + 2);
    if (data.size() < OP_PUSHDATA1) {
        out.push_back(uint8_t(data.size()));
    } else {
        out.push_back(OP_PUSHDATA1);
        out.push_back(uint8_t(data.size()));
    }
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

std::array<uint8_t, 20> KeyHash(std::span<const uint8_t> pubkey)
{
    std::array<uint8_t, 20> h{};
    Hash160(pubkey, h.data());
    return h;
}

Script P2pkhScript(const std::array<uint8_t, 20>& hash)
{
    uint8_t s[25] = {OP_DUP, OP_HASH160, 20};
    std::memcpy(s + 3, hash.data(), 20);
    s[23] = OP_EQUALVERIFY;
    s[24] = OP_CHECKSIG;
    return Script(s, sizeof s);
}

} // namespace

struct Signer::Impl {
    struct Identity {
        std::array<uint8_t, 32> secret;
        std::array<uint8_t, 33> pubkey;
        std::array<uint8_t, 20> key_hash;
        std::vector<uint8_t> multisig;        // OP_2 <k> <k+1> <k+2> OP_3 OP_CHECKMULTISIG
        secp256k1_keypair tweaked_keypair;    // key path: internal key tweaked by H_TapTweak(P)
        std::array<uint8_t, 32> key_path_output;
        secp256k1_keypair leaf_keypair;       // tapscript: the key in the leaf (untweaked)
        std::vector<uint8_t> leaf_script;     // <32-byte x-only key> OP_CHECKSIG
        uint256 leaf_hash;
        TaprootScriptOutput script_path;      // output key and control block of that one leaf
    };
    std::vector<Identity> ids;

    const Identity& Id(uint8_t v) const { return ids.at(v % ids.size()); }
    std::array<uint8_t, 33> Pubkey(std::size_t i) const { return ids[i % ids.size()].pubkey; }
};

Signer::Signer(uint64_t seed, std::size_t count) : m_impl(std::make_unique<Impl>())
{
    if (count == 0 || count > 256) throw std::invalid_argument("gen-chain: 1 to 256 signing identities");
    const KeyPool pool = MakeKeyPool(seed ^ 0x5167'6e65'6453'7065ULL, count); // keys of their own, not the unspent pool's
    m_impl->ids.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
        Impl::Identity& id = m_impl->ids[i];
        id.secret = SecretKeyOf(seed ^ 0x5167'6e65'6453'7065ULL, i);
        id.pubkey = pool.compressed[i];
        id.key_hash = KeyHash(id.pubkey);

        // Key path: Q = P + H_TapTweak(P)·G, signed with the tweaked secret key.
        secp256k1_keypair kp;
        Require(secp256k1_keypair_create(SignCtx(), &kp, id.secret.data()) == 1, "keypair_create");
        id.leaf_keypair = kp;
        const uint256 tweak = TaggedHash("TapTweak", pool.xonly[i]);
        id.tweaked_keypair = kp;
        Require(secp256k1_keypair_xonly_tweak_add(SignCtx(), &id.tweaked_keypair, tweak.data()) == 1, "keypair_xonly_tweak_add");
        secp256k1_xonly_pubkey q;
        Require(secp256k1_keypair_xonly_pub(SignCtx(), &q, nullptr, &id.tweaked_keypair) == 1, "keypair_xonly_pub");
        Require(secp256k1_xonly_pubkey_serialize(SignCtx(), id.key_path_output.data(), &q) == 1, "xonly serialize");

        // Script path: one leaf that checks this identity's own key; the internal key is the next
        // identity's, so the key path of this output is not one we use.
        id.leaf_script.assign(1, 32);
        id.leaf_script.insert(id.leaf_script.end(), pool.xonly[i].begin(), pool.xonly[i].end());
        id.leaf_script.push_back(OP_CHECKSIG_);
        std::array<uint8_t, 2 + 34> leaf_msg{TAPROOT_LEAF_TAPSCRIPT, 34};
        std::copy(id.leaf_script.begin(), id.leaf_script.end(), leaf_msg.begin() + 2);
        id.leaf_hash = TaggedHash("TapLeaf", leaf_msg);
        id.script_path = MakeTaprootScriptOutput(seed ^ 0x5167'6e65'6453'7065ULL, (i + 1) % count, id.leaf_script);
    }
    for (std::size_t i = 0; i < count; ++i) {
        std::vector<uint8_t>& ms = m_impl->ids[i].multisig;
        ms.push_back(OP_1 + 1); // OP_2
        for (std::size_t k = 0; k < 3; ++k) {
            const auto pk = m_impl->Pubkey(i + k);
            ms.push_back(33);
            ms.insert(ms.end(), pk.begin(), pk.end());
        }
        ms.push_back(OP_1 + 2); // OP_3
        ms.push_back(OP_CHECKMULTISIG);
    }
}

Signer::~Signer() = default;

std::size_t Signer::Count() const noexcept { return m_impl->ids.size(); }

Script Signer::ScriptPubKey(SignedKind kind, uint8_t variant) const
{
    const Impl::Identity& id = m_impl->Id(variant);
    switch (kind) {
    case SignedKind::P2PKH: return P2pkhScript(id.key_hash);
    case SignedKind::P2WPKH: {
        uint8_t s[22] = {OP_0, 20};
        std::memcpy(s + 2, id.key_hash.data(), 20);
        return Script(s, sizeof s);
    }
    case SignedKind::P2SH_MULTISIG: {
        uint8_t s[23] = {OP_HASH160, 20};
        Hash160(id.multisig, s + 2);
        s[22] = OP_EQUAL;
        return Script(s, sizeof s);
    }
    case SignedKind::P2WSH_MULTISIG: {
        uint8_t s[34] = {OP_0, 32};
        Sha256().Write(id.multisig).Finalize(s + 2);
        return Script(s, sizeof s);
    }
    case SignedKind::P2TR_KEY:
    case SignedKind::TAPSCRIPT: {
        uint8_t s[34] = {OP_1, 32};
        const auto& q = kind == SignedKind::P2TR_KEY ? id.key_path_output : id.script_path.output_key;
        std::memcpy(s + 2, q.data(), 32);
        return Script(s, sizeof s);
    }
    }
    throw std::logic_error("gen-chain: unknown signed kind");
}

void Signer::Place(TxIn& in, const SignedSpend& spend) const
{
    const Impl::Identity& id = m_impl->Id(spend.variant);
    const std::vector<uint8_t> ecdsa(ECDSA_PLACEHOLDER, 0x30);
    in.script_sig.clear();
    in.witness.stack.clear();
    switch (spend.kind) {
    case SignedKind::P2PKH: {
        Script ss;
        ss.append(Push(ecdsa));
        ss.append(Push(id.pubkey));
        in.script_sig = std::move(ss);
        break;
    }
    case SignedKind::P2WPKH:
        in.witness.stack = {ecdsa, std::vector<uint8_t>(id.pubkey.begin(), id.pubkey.end())};
        break;
    case SignedKind::P2SH_MULTISIG: {
        Script ss;
        ss.push_back(OP_0); // CHECKMULTISIG's extra pop (NULLDUMMY: empty)
        ss.append(Push(ecdsa));
        ss.append(Push(ecdsa));
        ss.append(Push(id.multisig));
        in.script_sig = std::move(ss);
        break;
    }
    case SignedKind::P2WSH_MULTISIG: in.witness.stack = {{}, ecdsa, ecdsa, id.multisig}; break;
    case SignedKind::P2TR_KEY: in.witness.stack = {std::vector<uint8_t>(SCHNORR_SIZE, 0)}; break;
    case SignedKind::TAPSCRIPT:
        in.witness.stack = {std::vector<uint8_t>(SCHNORR_SIZE, 0), id.leaf_script, id.script_path.control_block};
        break;
    }
}

namespace {

std::vector<uint8_t> SignEcdsa(const std::array<uint8_t, 32>& secret, const uint256& hash)
{
    secp256k1_ecdsa_signature sig;
    Require(secp256k1_ecdsa_sign(SignCtx(), &sig, hash.data(), secret.data(), nullptr, nullptr) == 1, "ecdsa_sign");
    std::vector<uint8_t> der(72);
    std::size_t len = der.size();
    Require(secp256k1_ecdsa_signature_serialize_der(SignCtx(), der.data(), &len, &sig) == 1, "serialize_der");
    der.resize(len);
    der.push_back(SIGHASH_ALL);
    return der;
}

std::vector<uint8_t> SignSchnorr(const secp256k1_keypair& kp, const uint256& hash)
{
    std::vector<uint8_t> sig(SCHNORR_SIZE);
    // The message as auxiliary randomness: deterministic, and still a fresh nonce per message.
    Require(secp256k1_schnorrsig_sign32(SignCtx(), sig.data(), hash.data(), &kp, hash.data()) == 1, "schnorrsig_sign32");
    return sig;
}

} // namespace

void Signer::SignInputs(MutableTransaction& mtx, std::span<const TxOut> spent, std::span<const std::optional<SignedSpend>> how) const
{
    if (spent.size() != mtx.vin.size() || how.size() != mtx.vin.size()) {
        throw std::invalid_argument("gen-chain: SignInputs needs one spent output and one plan per input");
    }
    if (std::none_of(how.begin(), how.end(), [](const auto& h) { return h.has_value(); })) return;
    // Signature hashes read no scriptSig or witness of the input they sign (legacy hashes blank
    // every scriptSig), so one immutable copy of the placed transaction serves every input.
    const Transaction tx(mtx);
    PrecomputedTxData txdata;
    txdata.Init(tx, std::vector<TxOut>(spent.begin(), spent.end()), true);
    for (uint32_t i = 0; i < mtx.vin.size(); ++i) {
        if (!how[i]) continue;
        const Impl::Identity& id = m_impl->Id(how[i]->variant);
        TxIn& in = mtx.vin[i];
        const Amount amount = spent[i].value;
        switch (how[i]->kind) {
        case SignedKind::P2PKH: {
            const Script code = P2pkhScript(id.key_hash);
            const auto sig = SignEcdsa(id.secret, SignatureHash(code.span(), tx, i, SIGHASH_ALL, amount, SigVersion::BASE, &txdata));
            Script ss;
            ss.append(Push(sig));
            ss.append(Push(id.pubkey));
            in.script_sig = std::move(ss);
            break;
        }
        case SignedKind::P2WPKH: {
            const Script code = P2pkhScript(id.key_hash);
            in.witness.stack[0] = SignEcdsa(id.secret, SignatureHash(code.span(), tx, i, SIGHASH_ALL, amount, SigVersion::WITNESS_V0, &txdata));
            break;
        }
        case SignedKind::P2SH_MULTISIG:
        case SignedKind::P2WSH_MULTISIG: {
            const bool witness = how[i]->kind == SignedKind::P2WSH_MULTISIG;
            const uint256 hash = SignatureHash(id.multisig, tx, i, SIGHASH_ALL, amount,
                                               witness ? SigVersion::WITNESS_V0 : SigVersion::BASE, &txdata);
            // Keys k and k+1 of the three sign, in the script's key order as CHECKMULTISIG wants.
            const auto sig1 = SignEcdsa(id.secret, hash);
            const auto sig2 = SignEcdsa(m_impl->ids[(how[i]->variant % m_impl->ids.size() + 1) % m_impl->ids.size()].secret, hash);
            if (witness) {
                in.witness.stack[1] = sig1;
                in.witness.stack[2] = sig2;
            } else {
                Script ss;
                ss.push_back(OP_0);
                ss.append(Push(sig1));
                ss.append(Push(sig2));
                ss.append(Push(id.multisig));
                in.script_sig = std::move(ss);
            }
            break;
        }
        case SignedKind::P2TR_KEY:
        case SignedKind::TAPSCRIPT: {
            const bool key_path = how[i]->kind == SignedKind::P2TR_KEY;
            ScriptExecutionData exec;
            exec.annex_init = true;
            exec.annex_present = false;
            if (!key_path) {
                exec.tapleaf_hash_init = true;
                exec.tapleaf_hash = id.leaf_hash;
                exec.codeseparator_pos_init = true;
                exec.codeseparator_pos = 0xffffffff;
            }
            uint256 hash;
            Require(SignatureHashSchnorr(hash, exec, tx, i, SIGHASH_DEFAULT, key_path ? SigVersion::TAPROOT : SigVersion::TAPSCRIPT, txdata),
                    "taproot signature hash");
            in.witness.stack[0] = SignSchnorr(key_path ? id.tweaked_keypair : id.leaf_keypair, hash);
            break;
        }
        }
    }
}

} // namespace ibdkit::gen_detail
