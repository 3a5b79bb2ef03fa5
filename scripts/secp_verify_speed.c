/* The cost of one signature check in a given libsecp256k1 build (docs/benchmarks.md §12): an ECDSA
 * check as a script's CHECKSIG makes it (a compressed key parsed, then verified) and a BIP340 check,
 * over 64 keys in turn, in µs each. Any unprefixed build of the library:
 *   cc -O2 scripts/secp_verify_speed.c -lsecp256k1 && ./a.out                     (Debian's)
 *   cc -O2 -I SRC/include scripts/secp_verify_speed.c -L LIBDIR -lsecp256k1 -Wl,-rpath,LIBDIR */
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { KEYS = 64, CHECKS = 40000 };

static double Now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void Require(int ok, const char* what)
{
    if (!ok) {
        fprintf(stderr, "secp_verify_speed: %s failed\n", what);
        exit(1);
    }
}

int main(void)
{
    secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    static unsigned char msg[KEYS][32], pub[KEYS][33], schnorr[KEYS][64];
    static secp256k1_ecdsa_signature sig[KEYS];
    static secp256k1_xonly_pubkey xonly[KEYS];
    for (int i = 0; i < KEYS; ++i) {
        unsigned char key[32];
        memset(key, i + 1, sizeof key);
        memset(msg[i], i * 7 + 3, sizeof msg[i]);
        secp256k1_pubkey p;
        size_t len = sizeof pub[i];
        Require(secp256k1_ec_pubkey_create(ctx, &p, key), "pubkey_create");
        Require(secp256k1_ec_pubkey_serialize(ctx, pub[i], &len, &p, SECP256K1_EC_COMPRESSED), "serialize");
        Require(secp256k1_ecdsa_sign(ctx, &sig[i], msg[i], key, NULL, NULL), "ecdsa_sign");
        secp256k1_keypair kp;
        Require(secp256k1_keypair_create(ctx, &kp, key), "keypair_create");
        Require(secp256k1_keypair_xonly_pub(ctx, &xonly[i], NULL, &kp), "keypair_xonly_pub");
        Require(secp256k1_schnorrsig_sign32(ctx, schnorr[i], msg[i], &kp, NULL), "schnorrsig_sign32");
    }
    int valid = 0;
    double t = Now();
    for (int r = 0; r < CHECKS; ++r) {
        const int i = r % KEYS;
        secp256k1_pubkey p;
        valid += secp256k1_ec_pubkey_parse(ctx, &p, pub[i], sizeof pub[i]) && secp256k1_ecdsa_verify(ctx, &sig[i], msg[i], &p);
    }
    const double ecdsa_us = (Now() - t) / CHECKS * 1e6;
    t = Now();
    for (int r = 0; r < CHECKS; ++r) {
        const int i = r % KEYS;
        valid += secp256k1_schnorrsig_verify(ctx, schnorr[i], msg[i], 32, &xonly[i]);
    }
    const double schnorr_us = (Now() - t) / CHECKS * 1e6;
    Require(valid == 2 * CHECKS, "every check valid");
    printf("ecdsa (parse + verify) %.2f us, schnorr %.2f us\n", ecdsa_us, schnorr_us);
    secp256k1_context_destroy(ctx);
    return 0;
}
