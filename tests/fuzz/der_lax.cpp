// Fuzz: the lax DER signature parser (Core's ecdsa_signature_parse_der_lax, src/script/secp.cpp)
// on arbitrary bytes. It must never read out of bounds, and wherever libsecp256k1's strict DER
// parser reads a signature it must read the same R and S (the lax grammar is a superset), except
// where the strict parser zeroes a value: one not below the group order (the lax parser refuses
// it) or a negative one (the lax parser reads it as unsigned, as Core does).
#include "script/secp.h"

#include <secp256k1.h>

#include <algorithm>
#include <array>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static secp256k1_context* const ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    const std::span<const uint8_t> der(data, size);
    const auto lax = ibdkit::script_detail::ParseDerLaxCompact(der);
    secp256k1_ecdsa_signature sig;
    if (!secp256k1_ecdsa_signature_parse_der(ctx, &sig, data, size)) return 0;
    std::array<uint8_t, 64> strict;
    secp256k1_ecdsa_signature_serialize_compact(ctx, strict.data(), &sig);
    const auto zero = [](uint8_t b) { return b == 0; };
    const bool zeroed = std::all_of(strict.begin(), strict.begin() + 32, zero) || std::all_of(strict.begin() + 32, strict.end(), zero);
    if (!zeroed && (!lax || *lax != strict)) std::abort();
    return 0;
}
