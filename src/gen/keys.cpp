#include "gen/keys.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/endian.h>

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ibdkit::gen_detail {

// One context for the process: creating it costs more than the few dozen key operations.
const secp256k1_context* GenContext()
{
    static secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    return ctx;
}

void RequireSecp(bool ok, const char* what)
{
    if (!ok) throw std::logic_error(std::string("gen-chain: secp256k1 failed: ") + what);
}

namespace {
const secp256k1_context* Ctx() { return GenContext(); }
void Require(bool ok, const char* what) { RequireSecp(ok, what); }
} // namespace

// SHA256 of a tag and the numbers, retried on the (astronomically unlikely) out-of-range result.
std::array<uint8_t, 32> SecretKeyOf(uint64_t seed, std::size_t index)
{
    for (uint32_t counter = 0;; ++counter) {
        uint8_t buf[8 + 8 + 4];
        std::memcpy(buf, &seed, 8);
        const uint64_t idx = index;
        std::memcpy(buf + 8, &idx, 8);
        std::memcpy(buf + 16, &counter, 4);
        static constexpr char TAG[] = "ibdkit-gen-key";
        std::array<uint8_t, 32> sk{};
        Sha256().Write(reinterpret_cast<const uint8_t*>(TAG), sizeof(TAG) - 1).Write(buf, sizeof(buf)).Finalize(sk.data());
        if (secp256k1_ec_seckey_verify(Ctx(), sk.data())) return sk;
    }
}

uint256 TaggedHash(std::string_view tag, std::span<const uint8_t> data)
{
    uint8_t th[32];
    Sha256().Write(reinterpret_cast<const uint8_t*>(tag.data()), tag.size()).Finalize(th);
    uint256 out;
    Sha256().Write(th, 32).Write(th, 32).Write(data).Finalize(out.data());
    return out;
}

KeyPool MakeKeyPool(uint64_t seed, std::size_t count)
{
    KeyPool pool;
    pool.compressed.resize(count);
    pool.uncompressed.resize(count);
    pool.xonly.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
        const auto sk = SecretKeyOf(seed, i);
        secp256k1_pubkey pk;
        Require(secp256k1_ec_pubkey_create(Ctx(), &pk, sk.data()) == 1, "ec_pubkey_create");
        std::size_t len = 33;
        Require(secp256k1_ec_pubkey_serialize(Ctx(), pool.compressed[i].data(), &len, &pk, SECP256K1_EC_COMPRESSED) == 1,
                "serialize compressed");
        len = 65;
        Require(secp256k1_ec_pubkey_serialize(Ctx(), pool.uncompressed[i].data(), &len, &pk, SECP256K1_EC_UNCOMPRESSED) == 1,
                "serialize uncompressed");
        secp256k1_xonly_pubkey xpk;
        Require(secp256k1_xonly_pubkey_from_pubkey(Ctx(), &xpk, nullptr, &pk) == 1, "xonly_pubkey_from_pubkey");
        Require(secp256k1_xonly_pubkey_serialize(Ctx(), pool.xonly[i].data(), &xpk) == 1, "xonly serialize");
    }
    return pool;
}

TaprootScriptOutput MakeTaprootScriptOutput(uint64_t seed, std::size_t index, std::span<const uint8_t> leaf_script)
{
    TaprootScriptOutput out;
    out.leaf_script.assign(leaf_script.begin(), leaf_script.end());

    const auto sk = SecretKeyOf(seed ^ 0x7461707274726565ULL /* "taprtree" */, index);
    secp256k1_keypair kp;
    Require(secp256k1_keypair_create(Ctx(), &kp, sk.data()) == 1, "keypair_create");
    secp256k1_xonly_pubkey internal;
    Require(secp256k1_keypair_xonly_pub(Ctx(), &internal, nullptr, &kp) == 1, "keypair_xonly_pub");
    uint8_t p[32];
    Require(secp256k1_xonly_pubkey_serialize(Ctx(), p, &internal) == 1, "xonly serialize");

    // Leaf hash: H_TapLeaf(leaf_version || compact_size(len) || script); scripts here are < 253 bytes.
    Require(leaf_script.size() < 253, "leaf script too long");
    std::vector<uint8_t> leaf_msg;
    leaf_msg.push_back(0xc0);
    leaf_msg.push_back(uint8_t(leaf_script.size()));
    leaf_msg.insert(leaf_msg.end(), leaf_script.begin(), leaf_script.end());
    const uint256 leaf_hash = TaggedHash("TapLeaf", leaf_msg);

    // With a single leaf the merkle root is the leaf hash.
    uint8_t tweak_msg[64];
    std::memcpy(tweak_msg, p, 32);
    std::memcpy(tweak_msg + 32, leaf_hash.data(), 32);
    const uint256 tweak = TaggedHash("TapTweak", tweak_msg);

    secp256k1_pubkey tweaked;
    Require(secp256k1_xonly_pubkey_tweak_add(Ctx(), &tweaked, &internal, tweak.data()) == 1, "xonly_pubkey_tweak_add");
    secp256k1_xonly_pubkey q;
    int parity = 0;
    Require(secp256k1_xonly_pubkey_from_pubkey(Ctx(), &q, &parity, &tweaked) == 1, "xonly_pubkey_from_pubkey");
    Require(secp256k1_xonly_pubkey_serialize(Ctx(), out.output_key.data(), &q) == 1, "xonly serialize");
    Require(secp256k1_xonly_pubkey_tweak_add_check(Ctx(), out.output_key.data(), parity, &internal, tweak.data()) == 1,
            "tweak_add_check");

    out.control_block.push_back(uint8_t(0xc0 | parity));
    out.control_block.insert(out.control_block.end(), p, p + 32);
    return out;
}

} // namespace ibdkit::gen_detail
