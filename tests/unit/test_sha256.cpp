// SHA-256 / SHA256d: FIPS 180-4 vectors, Bitcoin data, streaming splits, and agreement of every
// back-end this CPU has (portable, SHA-NI, AVX2, AVX-512, ARMv8 SHA-2) on random and edge-length
// inputs, and which back-end the automatic choice picked.
#include <ibdkit/crypto/sha256.h>

#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace ibdkit {
namespace {

using sha256_detail::Backend;
using test::ParseHex;
using test::ToHex;

constexpr Backend ALL_BACKENDS[] = {Backend::Portable, Backend::ShaNi, Backend::Avx2, Backend::Avx512, Backend::ArmSha2};

const char* BackendName(Backend b)
{
    switch (b) {
    case Backend::Portable: return "portable";
    case Backend::ShaNi: return "sha-ni";
    case Backend::Avx2: return "avx2";
    case Backend::Avx512: return "avx512";
    case Backend::ArmSha2: return "arm-sha2";
    }
    return "?";
}

std::vector<Backend> Available()
{
    std::vector<Backend> out;
    for (Backend b : ALL_BACKENDS) {
        if (sha256_detail::BackendAvailable(b)) out.push_back(b);
    }
    return out;
}

// Every available back-end, then the automatic choice (which may combine two of them).
std::vector<std::optional<Backend>> AvailableAndAuto()
{
    std::vector<std::optional<Backend>> out;
    for (Backend b : Available()) out.emplace_back(b);
    out.emplace_back(std::nullopt);
    return out;
}

// Selects a back-end (nullopt = automatic); returns its name for failure messages.
std::string Use(std::optional<Backend> b)
{
    if (!b) {
        sha256_detail::ResetBackend();
        return "auto:" + std::string(Sha256Implementation());
    }
    EXPECT_TRUE(sha256_detail::ForceBackend(*b));
    return BackendName(*b);
}

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::string HexSha256(std::span<const uint8_t> data)
{
    std::array<uint8_t, 32> out;
    Sha256().Write(data).Finalize(out.data());
    return ToHex(out);
}

std::string HexSha256d(std::span<const uint8_t> data)
{
    std::array<uint8_t, 32> out;
    Sha256dOf(data, out.data());
    return ToHex(out);
}

std::string Reversed(std::string hex)
{
    std::string out;
    for (std::size_t i = hex.size(); i >= 2; i -= 2) out += hex.substr(i - 2, 2);
    return out;
}

uint64_t PrintedSeed()
{
    const uint64_t seed = test::TestSeed();
    std::cout << "[ seed     ] IBDKIT_TEST_SEED=" << seed << " replays this run\n";
    ::testing::Test::RecordProperty("seed", std::to_string(seed));
    return seed;
}

class Sha256Test : public ::testing::Test {
protected:
    void TearDown() override { sha256_detail::ResetBackend(); }
};

struct Vector {
    std::string message;
    std::size_t repeat;
    const char* digest;
};

// FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA2_Additional.pdf").
const Vector NIST_VECTORS[] = {
    {"", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
     1, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    {"a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
};

TEST_F(Sha256Test, NistVectorsOnEveryBackend)
{
    for (Backend b : Available()) {
        ASSERT_TRUE(sha256_detail::ForceBackend(b));
        for (const auto& v : NIST_VECTORS) {
            std::string msg;
            for (std::size_t i = 0; i < v.repeat; ++i) msg += v.message;
            EXPECT_EQ(HexSha256(Bytes(msg)), v.digest) << BackendName(b) << " len=" << msg.size();
        }
    }
}

TEST_F(Sha256Test, MillionAWrittenInOddPieces)
{
    const std::string a(1000, 'a');
    for (Backend b : Available()) {
        ASSERT_TRUE(sha256_detail::ForceBackend(b));
        Sha256 h;
        std::size_t left = 1000000, piece = 1;
        while (left) {
            const std::size_t n = std::min({piece, left, a.size()});
            h.Write(reinterpret_cast<const uint8_t*>(a.data()), n);
            left -= n;
            piece = piece * 7 % 997 + 1;
        }
        std::array<uint8_t, 32> out;
        h.Finalize(out.data());
        EXPECT_EQ(ToHex(out), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") << BackendName(b);
    }
}

TEST_F(Sha256Test, ResetRestartsTheStream)
{
    Sha256 h;
    h.Write(Bytes("garbage"));
    std::array<uint8_t, 32> out;
    h.Reset().Write(Bytes("abc")).Finalize(out.data());
    EXPECT_EQ(ToHex(out), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(Sha256Test, Sha256dKnownValues)
{
    for (Backend b : Available()) {
        ASSERT_TRUE(sha256_detail::ForceBackend(b));
        EXPECT_EQ(HexSha256d({}), "5df6e0e2761359d30a8275058e299fcc0381534545f55cf43e41983f5d4c9456") << BackendName(b);
        EXPECT_EQ(HexSha256d(Bytes("hello")), "9595c9df90075148eb06860365df33584b75bff782a510c6cd4883a419833d50")
            << BackendName(b);
    }
}

TEST_F(Sha256Test, GenesisBlockHeaderHash)
{
    const auto header = ParseHex(
        "0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e67768f61"
        "7fc81bc3888a51323a9fb8aa4b1e5e4a29ab5f49ffff001d1dac2b7c");
    ASSERT_EQ(header.size(), 80u);
    const std::string expected = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f";
    for (Backend b : Available()) {
        ASSERT_TRUE(sha256_detail::ForceBackend(b));
        EXPECT_EQ(Reversed(HexSha256d(header)), expected) << BackendName(b);
        std::array<uint8_t, 32> out;
        Sha256d().Write(std::span(header).first(40)).Write(std::span(header).subspan(40)).Finalize(out.data());
        EXPECT_EQ(Reversed(ToHex(out)), expected) << BackendName(b);
    }
}

TEST_F(Sha256Test, Sha256d64OfBlock170TxidsIsItsMerkleRoot)
{
    // Block 170's merkle root is the parent of its two txids (coinbase, then the first
    // person-to-person payment). Internal byte order = reversed display hex.
    const auto left = ParseHex(Reversed("b1fea52486ce0c62bb442b530a3f0132b826c74e473d1f2c220bfa78111c5082"));
    const auto right = ParseHex(Reversed("f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16"));
    std::vector<uint8_t> pair(left);
    pair.insert(pair.end(), right.begin(), right.end());
    for (Backend b : Available()) {
        ASSERT_TRUE(sha256_detail::ForceBackend(b));
        std::array<uint8_t, 32> out;
        Sha256d64(out.data(), pair.data(), 1);
        EXPECT_EQ(Reversed(ToHex(out)), "7dac2c5666815c17a3b36427de37bb9d2e2c5ccec3f8633eb91a4205cb4c10ff")
            << BackendName(b);
    }
}

TEST_F(Sha256Test, IncrementalSplitAtEveryOffsetEqualsOneShot)
{
    std::mt19937_64 rng(PrintedSeed());
    std::vector<uint8_t> msg(300);
    for (auto& c : msg) c = uint8_t(rng());
    for (Backend b : Available()) {
        ASSERT_TRUE(sha256_detail::ForceBackend(b));
        const std::string whole = HexSha256(msg);
        const std::string whole_d = HexSha256d(msg);
        for (std::size_t i = 0; i <= msg.size(); ++i) {
            std::array<uint8_t, 32> out;
            Sha256().Write(std::span(msg).first(i)).Write(std::span(msg).subspan(i)).Finalize(out.data());
            ASSERT_EQ(ToHex(out), whole) << BackendName(b) << " split at " << i;
            Sha256d().Write(std::span(msg).first(i)).Write(std::span(msg).subspan(i)).Finalize(out.data());
            ASSERT_EQ(ToHex(out), whole_d) << BackendName(b) << " split at " << i;
            // And a three-way split with a random second cut.
            const std::size_t j = i + rng() % (msg.size() - i + 1);
            Sha256()
                .Write(std::span(msg).first(i))
                .Write(std::span(msg).subspan(i, j - i))
                .Write(std::span(msg).subspan(j))
                .Finalize(out.data());
            ASSERT_EQ(ToHex(out), whole) << BackendName(b) << " split at " << i << "," << j;
        }
    }
}

TEST_F(Sha256Test, Sha256dOfShortAndLongInputsMatchesTheStream)
{
    // Sha256dOf has one-block (< 56 bytes) and 64-byte fast paths; the stream is the reference.
    std::vector<uint8_t> msg(130);
    for (std::size_t i = 0; i < msg.size(); ++i) msg[i] = uint8_t(i * 37 + 11);
    for (auto b : AvailableAndAuto()) {
        const std::string name = Use(b);
        for (std::size_t len = 0; len <= msg.size(); ++len) {
            const std::span<const uint8_t> m(msg.data(), len);
            std::array<uint8_t, 32> want;
            Sha256d().Write(m).Finalize(want.data());
            ASSERT_EQ(HexSha256d(m), ToHex(want)) << name << " len=" << len;
        }
    }
}

TEST_F(Sha256Test, BackendsAgreeOnRandomInputs)
{
    const auto backends = AvailableAndAuto();
    std::mt19937_64 rng(PrintedSeed());
    for (int iter = 0; iter < 400; ++iter) {
        std::vector<uint8_t> msg(rng() % 1001);
        for (auto& c : msg) c = uint8_t(rng());
        std::string ref, ref_d;
        for (auto b : backends) {
            const std::string name = Use(b);
            const std::string h = HexSha256(msg), hd = HexSha256d(msg);
            if (ref.empty()) {
                ref = h;
                ref_d = hd;
            }
            ASSERT_EQ(h, ref) << name << " len=" << msg.size() << " iter=" << iter;
            ASSERT_EQ(hd, ref_d) << name << " len=" << msg.size() << " iter=" << iter;
        }
    }
}

TEST_F(Sha256Test, Sha256d64BackendsAgreeAndWorkInPlace)
{
    const auto backends = AvailableAndAuto();
    std::mt19937_64 rng(PrintedSeed());
    for (std::size_t blocks = 1; blocks <= 33; ++blocks) {
        std::vector<uint8_t> in(64 * blocks);
        for (auto& c : in) c = uint8_t(rng());
        // Reference: the streaming SHA256d of each 64-byte input on the portable back-end.
        ASSERT_TRUE(sha256_detail::ForceBackend(Backend::Portable));
        std::vector<uint8_t> ref(32 * blocks);
        for (std::size_t i = 0; i < blocks; ++i) {
            Sha256d().Write(std::span(in).subspan(64 * i, 64)).Finalize(ref.data() + 32 * i);
        }
        for (auto b : backends) {
            const std::string name = Use(b);
            std::vector<uint8_t> out(32 * blocks + 1, 0xEE);
            Sha256d64(out.data(), in.data(), blocks);
            EXPECT_EQ(ToHex(std::span(out).first(32 * blocks)), ToHex(ref)) << name << " blocks=" << blocks;
            EXPECT_EQ(out.back(), 0xEE) << "wrote past the end: " << name << " blocks=" << blocks;
            std::vector<uint8_t> inplace = in;
            Sha256d64(inplace.data(), inplace.data(), blocks);
            EXPECT_EQ(ToHex(std::span(inplace).first(32 * blocks)), ToHex(ref))
                << "in place: " << name << " blocks=" << blocks;
            EXPECT_EQ(ToHex(std::span(inplace).subspan(32 * blocks)), ToHex(std::span(in).subspan(32 * blocks)))
                << "in place touched the unused tail: " << name << " blocks=" << blocks;
        }
    }
    sha256_detail::ResetBackend();
    std::array<uint8_t, 32> dummy{};
    Sha256d64(dummy.data(), nullptr, 0); // zero blocks: no access at all
    EXPECT_EQ(ToHex(dummy), std::string(64, '0'));
}

// Sha256dMany on every back-end against the streaming SHA256d of the concatenated ranges: random
// message counts (including the lane-refill, hand-over and second-hash remainders), lengths
// 0..5000 (with the 55/56/63/64/119/120-byte padding edges over-represented), 1-3 range splits
// (empty ranges included), and outputs that must not spill.
TEST_F(Sha256Test, Sha256dManyBackendsAgree)
{
    const auto backends = AvailableAndAuto();
    std::mt19937_64 rng(PrintedSeed());
    constexpr std::size_t EDGES[] = {0, 1, 31, 32, 55, 56, 63, 64, 65, 119, 120, 127, 128, 183, 184};
    for (int round = 0; round < 60; ++round) {
        std::size_t count = std::size_t(rng() % 70);
        if (round % 10 == 9) count = 1000 + std::size_t(rng() % 1500); // beyond the on-stack order array
        if (round == 0) count = 0;
        std::vector<std::vector<uint8_t>> msgs(count);
        for (auto& m : msgs) {
            std::size_t len;
            switch (rng() % 4) {
            case 0: len = EDGES[rng() % std::size(EDGES)]; break;
            case 1: len = std::size_t(rng() % 5001); break;
            default: len = std::size_t(rng() % 600); break;
            }
            if (rng() % 50 == 0) len = 20000 + std::size_t(rng() % 20000); // one long message keeps a lane busy
            m.resize(len);
            for (auto& c : m) c = uint8_t(rng());
        }
        // Reference digests (portable streaming).
        ASSERT_TRUE(sha256_detail::ForceBackend(Backend::Portable));
        std::vector<std::array<uint8_t, 32>> ref(count);
        for (std::size_t i = 0; i < count; ++i) Sha256d().Write(msgs[i]).Finalize(ref[i].data());
        // Split each message into 1-3 ranges at random points.
        std::vector<HashJob> jobs(count);
        std::vector<uint8_t> out(32 * count + 1, 0xEE);
        for (std::size_t i = 0; i < count; ++i) {
            const std::span<const uint8_t> m(msgs[i]);
            const int parts = 1 + int(rng() % 3);
            std::size_t a = m.size(), b = m.size();
            if (parts >= 2) a = m.empty() ? 0 : std::size_t(rng() % (m.size() + 1));
            if (parts == 3) b = a + (m.size() == a ? 0 : std::size_t(rng() % (m.size() - a + 1)));
            if (parts == 1) {
                jobs[i] = HashJob(m, out.data() + 32 * i);
            } else {
                jobs[i] = HashJob(m.first(a), m.subspan(a, b - a), m.subspan(b), out.data() + 32 * i);
            }
        }
        // The same messages laid out with their padding, one after another (Sha256dManyPadded).
        std::vector<std::size_t> at(count);
        std::size_t total = 0;
        for (std::size_t i = 0; i < count; ++i) {
            at[i] = total;
            total += msgs[i].size() + Sha256PaddingSize(msgs[i].size());
        }
        std::vector<uint8_t> padded(total);
        std::vector<PaddedHashJob> padded_jobs(count);
        for (std::size_t i = 0; i < count; ++i) {
            std::copy(msgs[i].begin(), msgs[i].end(), padded.begin() + std::ptrdiff_t(at[i]));
            WriteSha256Padding(padded.data() + at[i] + msgs[i].size(), msgs[i].size());
            const std::size_t len = msgs[i].size() + Sha256PaddingSize(msgs[i].size());
            ASSERT_EQ(len % 64, 0u) << msgs[i].size();
            padded_jobs[i] = PaddedHashJob{padded.data() + at[i], uint32_t(len / 64), out.data() + 32 * i};
        }
        for (auto b : backends) {
            const std::string name = Use(b);
            for (bool pre_padded : {false, true}) {
                std::fill(out.begin(), out.end(), 0xEE);
                if (pre_padded) {
                    Sha256dManyPadded(padded_jobs);
                } else {
                    Sha256dMany(jobs);
                }
                for (std::size_t i = 0; i < count; ++i) {
                    ASSERT_EQ(ToHex(std::span(out).subspan(32 * i, 32)), ToHex(ref[i]))
                        << name << (pre_padded ? " padded" : "") << " round=" << round << " count=" << count
                        << " msg=" << i << " len=" << msgs[i].size() << " ranges=" << jobs[i].size[0] << ","
                        << jobs[i].size[1] << "," << jobs[i].size[2];
                }
                EXPECT_EQ(out.back(), 0xEE) << name;
            }
        }
    }
    sha256_detail::ResetBackend();
}

TEST_F(Sha256Test, PaddedJobsWithoutBlocksAreSkipped)
{
    // A job with no block is not a padded message: skipped, its output untouched; the others hash.
    std::vector<uint8_t> msg(100, 0x61);
    const std::size_t len = msg.size();
    msg.resize(len + Sha256PaddingSize(len));
    WriteSha256Padding(msg.data() + len, len);
    std::array<uint8_t, 32> ref{}, out{}, untouched{};
    untouched.fill(0xEE);
    Sha256d().Write(std::span<const uint8_t>(msg.data(), len)).Finalize(ref.data());
    const std::vector<PaddedHashJob> jobs{{msg.data(), 0, untouched.data()}, {msg.data(), uint32_t(msg.size() / 64), out.data()}};
    Sha256dManyPadded(jobs);
    EXPECT_EQ(ToHex(out), ToHex(ref));
    EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](uint8_t b) { return b == 0xEE; }));
}

TEST_F(Sha256Test, InPlaceMerkleHalvingMatchesPairwiseHashing)
{
    // The way merkle code uses it: halve an array of 2^k hashes in place down to the root.
    std::mt19937_64 rng(PrintedSeed());
    std::vector<uint8_t> leaves(32 * 64);
    for (auto& c : leaves) c = uint8_t(rng());
    std::vector<std::vector<uint8_t>> level;
    for (std::size_t i = 0; i < 64; ++i) level.emplace_back(leaves.begin() + 32 * i, leaves.begin() + 32 * i + 32);
    while (level.size() > 1) {
        std::vector<std::vector<uint8_t>> next;
        for (std::size_t i = 0; i < level.size(); i += 2) {
            std::vector<uint8_t> pair(level[i]);
            pair.insert(pair.end(), level[i + 1].begin(), level[i + 1].end());
            std::vector<uint8_t> parent(32);
            Sha256d().Write(pair).Finalize(parent.data());
            next.push_back(parent);
        }
        level = std::move(next);
    }
    for (auto b : AvailableAndAuto()) {
        const std::string name = Use(b);
        std::vector<uint8_t> work = leaves;
        for (std::size_t n = 64; n > 1; n /= 2) Sha256d64(work.data(), work.data(), n / 2);
        EXPECT_EQ(ToHex(std::span(work).first(32)), ToHex(level[0])) << name;
    }
}

TEST_F(Sha256Test, DispatchReportsAndForcesBackends)
{
    sha256_detail::ResetBackend();
    const std::string automatic(Sha256Implementation());
    EXPECT_FALSE(automatic.empty());
    EXPECT_TRUE(sha256_detail::BackendAvailable(Backend::Portable));
    for (Backend b : ALL_BACKENDS) {
        const bool ok = sha256_detail::ForceBackend(b);
        EXPECT_EQ(ok, sha256_detail::BackendAvailable(b));
        if (ok) {
            EXPECT_EQ(Sha256Implementation(), BackendName(b));
        }
    }
    sha256_detail::ResetBackend();
    EXPECT_EQ(Sha256Implementation(), automatic);
    std::cout << "[ sha256   ] automatic back-end: " << automatic << "; available:";
    for (Backend b : Available()) std::cout << ' ' << BackendName(b);
    std::cout << '\n';
}

// The padding edges (0, 1, 55, 56, 63, 64, 65), multiples of 64 and 1 MiB: every back-end's
// SHA-256, SHA256d, Sha256d64 and Sha256dMany against the portable code on the same bytes.
TEST_F(Sha256Test, BackendsAgreeOnEdgeLengths)
{
    std::mt19937_64 rng(PrintedSeed());
    std::vector<std::size_t> lengths = {0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 1 << 20, (1 << 20) + 1};
    for (std::size_t k = 2; k <= 16; ++k) lengths.push_back(64 * k);
    std::vector<uint8_t> buf((1 << 20) + 1);
    for (auto& c : buf) c = uint8_t(rng());
    for (std::size_t len : lengths) {
        const std::span<const uint8_t> m(buf.data(), len);
        ASSERT_TRUE(sha256_detail::ForceBackend(Backend::Portable));
        const std::string ref = HexSha256(m), ref_d = HexSha256d(m);
        std::vector<uint8_t> ref_d64(32 * (len / 64));
        Sha256d64(ref_d64.data(), m.data(), len / 64);
        for (auto b : AvailableAndAuto()) {
            const std::string name = Use(b);
            EXPECT_EQ(HexSha256(m), ref) << name << " len=" << len;
            EXPECT_EQ(HexSha256d(m), ref_d) << name << " len=" << len;
            std::vector<uint8_t> d64(32 * (len / 64));
            Sha256d64(d64.data(), m.data(), len / 64);
            EXPECT_EQ(d64, ref_d64) << name << " len=" << len;
            std::array<uint8_t, 32> many{};
            const HashJob job[1] = {HashJob(m.first(len / 3), m.subspan(len / 3, len / 3), m.subspan(2 * (len / 3)), many.data())};
            Sha256dMany(job);
            EXPECT_EQ(ToHex(many), ref_d) << name << " len=" << len;
        }
    }
}

// The automatic choice against what the CPU offers. IBDKIT_EXPECT_SHA256_BACKEND (set by
// scripts/test_arm64.sh for each emulated CPU) names the back-end that must have been picked.
TEST_F(Sha256Test, AutomaticChoiceIsTheFastestBackendThisCpuHas)
{
    sha256_detail::ResetBackend();
    const std::string automatic(Sha256Implementation());
    if (const char* want = std::getenv("IBDKIT_EXPECT_SHA256_BACKEND"); want && *want) {
        EXPECT_EQ(automatic, want);
    }
    if (const char* off = std::getenv("IBDKIT_DISABLE_CPU_FEATURES"); off && *off && std::string(off) != "0") {
        EXPECT_EQ(automatic, "portable");
        for (Backend b : ALL_BACKENDS) EXPECT_EQ(sha256_detail::BackendAvailable(b), b == Backend::Portable);
    }
#if defined(__aarch64__)
    EXPECT_EQ(automatic, sha256_detail::BackendAvailable(Backend::ArmSha2) ? "arm-sha2" : "portable");
#else
    EXPECT_FALSE(sha256_detail::BackendAvailable(Backend::ArmSha2));
#endif
    RecordProperty("sha256_backend", automatic);
}

TEST_F(Sha256Test, SwitchingBackendsWhileOtherThreadsHashIsSafe)
{
    // Streams may change back-end between blocks: all share one state layout.
    const auto backends = Available();
    const std::string msg(100000, 'x');
    const std::string expected = HexSha256(Bytes(msg));
    std::atomic<bool> stop{false};
    std::thread switcher([&] {
        std::size_t i = 0;
        while (!stop.load()) sha256_detail::ForceBackend(backends[i++ % backends.size()]);
    });
    std::vector<std::thread> hashers;
    std::atomic<int> mismatches{0};
    for (int t = 0; t < 2; ++t) {
        hashers.emplace_back([&] {
            for (int r = 0; r < 20; ++r) {
                Sha256 h;
                for (std::size_t off = 0; off < msg.size(); off += 777) {
                    h.Write(reinterpret_cast<const uint8_t*>(msg.data()) + off, std::min<std::size_t>(777, msg.size() - off));
                }
                std::array<uint8_t, 32> out;
                h.Finalize(out.data());
                if (ToHex(out) != expected) ++mismatches;
            }
        });
    }
    for (auto& h : hashers) h.join();
    stop = true;
    switcher.join();
    EXPECT_EQ(mismatches.load(), 0);
}

} // namespace
} // namespace ibdkit
