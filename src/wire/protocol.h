// src/wire/protocol.h — the P2P messages a block-downloading client speaks (Core's protocol.h,
// net_processing.cpp), encoded and decoded with ibdkit's serialization.
//
// Payload layouts (all integers little-endian unless noted):
//   version     i32 version | u64 services | i64 time | addr_recv | addr_from | u64 nonce |
//               CompactSize-string user agent (≤ 256) | i32 start height | [u8 relay]
//               (addr = u64 services | 16-byte IPv6 address | u16 port big-endian)
//   verack, sendheaders, wtxidrelay, sendaddrv2, getaddr, mempool: empty
//   ping, pong  u64 nonce
//   getheaders, getblocks
//               u32 version | CompactSize count (≤ 101) | hashes | hash stop
//   headers     CompactSize count (≤ 2000) | (80-byte header | CompactSize tx count)*
//   inv, getdata, notfound
//               CompactSize count (≤ 50000) | (u32 type | 32-byte hash)*
//   block       a block with witness
//   reject      string message | u8 code | string reason | [32-byte hash]
//   addr        CompactSize count (≤ 1000) | (u32 time | addr)*
//   feature     (BIP 434) string featureid (4..80 bytes) | byte-vector featuredata (≤ 512 bytes)
//   getbspent   (BIP 455) 32-byte block hash | u32 cutoff
//   bspent      (BIP 455) 32-byte block hash | CompactSize count | coin*, each coin:
//               u32 input index (the block's inputs counted without the coinbase's, strictly
//               increasing) | u32 height·2 + coinbase | reconstructable script |
//               CompactSize CompressAmount(value)
//               reconstructable script: a prefix byte, then 00: CompactSize length | the script;
//               01 P2PKH: the 20-byte hash; 02/03 P2PK: the key's 32 bytes after its 02/03;
//               04 P2PK: the key's 64 bytes after its 04; 05 P2SH: the 20-byte hash; 06 P2WSH:
//               the 32-byte hash; 07 P2WPKH: the 20-byte hash; 08 P2TR: the 32-byte key
//
// Decoders take an untrusted payload and return Result<T>: Errc::SizeTooLarge for a count above
// its limit, Errc::EndOfData for a truncated payload. They are as lenient as Core's
// net_processing.cpp, which reads what it needs from a message and never looks past it: bytes
// after a complete message are ignored (later protocol versions append fields), a header's
// transaction count in `headers` is read and ignored, and `version` may end after any of its
// optional groups. The messages of BIPs 434 and 455 are the exception: no later version appends to
// them (a new version is a new featureid), so their decoders want exactly their bytes
// (Errc::TrailingData), as BIP 434 allows a node to require of `feature`.
#pragma once

#include <ibdkit/error.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/script.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit {

/// Core's PROTOCOL_VERSION (wtxidrelay, BIP339).
inline constexpr int32_t PROTOCOL_VERSION = 70016;
/// Core's MIN_PEER_PROTO_VERSION: older peers are disconnected.
inline constexpr int32_t MIN_PEER_PROTO_VERSION = 31800;
/// Version from which a peer understands sendheaders (BIP130).
inline constexpr int32_t SENDHEADERS_VERSION = 70012;
/// Core's MAX_SUBVERSION_LENGTH.
inline constexpr std::size_t MAX_SUBVERSION_LENGTH = 256;
/// Core's MAX_HEADERS_RESULTS: the most headers one `headers` message may carry.
inline constexpr std::size_t MAX_HEADERS_RESULTS = 2000;
/// Core's MAX_LOCATOR_SZ.
inline constexpr std::size_t MAX_LOCATOR_SZ = 101;
/// Core's MAX_INV_SZ: the most entries of an inv / getdata / notfound.
inline constexpr std::size_t MAX_INV_SZ = 50000;
/// Core's MAX_ADDR_TO_SEND: the most entries of one addr message.
inline constexpr std::size_t MAX_ADDR_TO_SEND = 1000;
/// The most block hashes a node answers one getblocks with.
inline constexpr std::size_t MAX_BLOCKS_PER_GETBLOCKS = 500;
/// ibdkit's user agent (BIP14).
inline constexpr std::string_view USER_AGENT = "/ibdkit:0.1/";

/// BIP 434: the protocol version a peer must announce before it is sent `feature` messages.
inline constexpr int32_t FEATURE_NEGOTIATION_VERSION = 70017;
/// BIP 434's bounds on a `feature` message's id and data.
inline constexpr std::size_t MIN_FEATURE_ID_LENGTH = 4;
inline constexpr std::size_t MAX_FEATURE_ID_LENGTH = 80;
inline constexpr std::size_t MAX_FEATURE_DATA_LENGTH = 512;
/// BIP 455's feature id: the peer answers `getbspent`.
inline constexpr std::string_view FEATURE_BLOCK_SPENT_COINS_V1 = "blockspentcoinsv1";
/// The smallest coin a `bspent` can carry: index, code, prefix 00, length 0, amount 0.
inline constexpr std::size_t MIN_BSPENT_COIN_SIZE = 4 + 4 + 1 + 1 + 1;
/// The most coins one `bspent` can carry within Core's message limit (a count above it is refused
/// before anything is read for it).
inline constexpr std::size_t MAX_BSPENT_COINS = 4'000'000 / MIN_BSPENT_COIN_SIZE;

/// Service bits (Core's ServiceFlags).
enum ServiceFlags : uint64_t {
    NODE_NONE = 0,
    NODE_NETWORK = 1 << 0,
    NODE_BLOOM = 1 << 2,
    NODE_WITNESS = 1 << 3,
    NODE_COMPACT_FILTERS = 1 << 6,
    NODE_NETWORK_LIMITED = 1 << 10,
    NODE_P2P_V2 = 1 << 11,
};

/// Inventory types (Core's GetDataMsg).
inline constexpr uint32_t MSG_WITNESS_FLAG = 1u << 30;
inline constexpr uint32_t MSG_TX = 1;
inline constexpr uint32_t MSG_BLOCK = 2;
inline constexpr uint32_t MSG_WTX = 5;
inline constexpr uint32_t MSG_FILTERED_BLOCK = 3;
inline constexpr uint32_t MSG_CMPCT_BLOCK = 4;
inline constexpr uint32_t MSG_WITNESS_BLOCK = MSG_BLOCK | MSG_WITNESS_FLAG;
inline constexpr uint32_t MSG_WITNESS_TX = MSG_TX | MSG_WITNESS_FLAG;

/// Network address as the version message carries it (no time field).
struct VersionAddress {
    uint64_t services{0};
    std::array<uint8_t, 16> ip{};   ///< IPv6, or IPv4-mapped ::ffff:a.b.c.d
    uint16_t port{0};               ///< host order; serialized big-endian

    /// An IPv4-mapped address.
    static VersionAddress FromIPv4(std::array<uint8_t, 4> v4, uint16_t port, uint64_t services = 0) noexcept;
    friend bool operator==(const VersionAddress&, const VersionAddress&) = default;
};

/// A peer's text as a line of ours may show it (a user agent, a reject's command and reason):
/// only the characters of Core's SAFE_CHARS_DEFAULT (SanitizeString, its cleanSubVer), so that a
/// peer cannot put control characters, terminal escapes or a line break into our output.
std::string SanitizePeerText(std::string_view text);

struct VersionMessage {
    int32_t version{PROTOCOL_VERSION};
    uint64_t services{NODE_NONE};
    int64_t time{0};
    VersionAddress addr_recv;
    VersionAddress addr_from;
    uint64_t nonce{0};
    std::string user_agent{USER_AGENT};
    int32_t start_height{0};
    bool relay{false}; ///< absent on the wire (pre-BIP37 peers) → true
    friend bool operator==(const VersionMessage&, const VersionMessage&) = default;
};

/// getheaders / getblocks: a locator (newest first, then exponentially sparser back to the
/// genesis) and a stop hash (null: as many as the limit allows).
struct LocatorMessage {
    uint32_t version{uint32_t(PROTOCOL_VERSION)};
    std::vector<BlockHash> locator;
    BlockHash hash_stop;
    friend bool operator==(const LocatorMessage&, const LocatorMessage&) = default;
};

struct Inv {
    uint32_t type{0};
    uint256 hash;
    bool IsBlock() const noexcept { return (type & ~MSG_WITNESS_FLAG) == MSG_BLOCK; }
    friend bool operator==(const Inv&, const Inv&) = default;
};

/// An addr entry (v1): when the address was last seen, and the address.
struct AddrEntry {
    uint32_t time{0};
    VersionAddress addr;
    friend bool operator==(const AddrEntry&, const AddrEntry&) = default;
};

struct RejectMessage {
    std::string message; ///< the command that was rejected
    uint8_t code{0};
    std::string reason;
    std::optional<uint256> hash;
    /// "reject of <message> (<code name> 0x..): <reason>", the peer's text sanitized.
    std::string ToString() const;
};

/// BIP 434's `feature`: an id (printable ASCII by convention, not checked) and its data.
struct FeatureMessage {
    std::string id;
    std::vector<uint8_t> data;
    friend bool operator==(const FeatureMessage&, const FeatureMessage&) = default;
};

/// BIP 455's `getbspent`: the coins a block spent, only those created below `cutoff` when it is
/// above 0 (the client keeps the younger ones itself).
struct GetBspentMessage {
    BlockHash block_hash;
    uint32_t cutoff{0};
    /// Whether a coin created at `height` belongs in the answer.
    bool Wants(uint32_t height) const noexcept { return cutoff == 0 || height < cutoff; }
    friend bool operator==(const GetBspentMessage&, const GetBspentMessage&) = default;
};

/// One coin of a `bspent` as the wire carries it (BIP 455's Coin). The amount stays compressed
/// here: decompressing it is the coins' business (coins/compressor.h), a floor above this one.
struct BspentCoin {
    uint32_t input_index{0};       ///< among the block's inputs, the coinbase's not counted
    uint32_t height{0};            ///< 31 bits
    bool coinbase{false};
    Script script;
    uint64_t compressed_amount{0}; ///< CompressAmount(value)
    friend bool operator==(const BspentCoin&, const BspentCoin&) = default;
};

/// BIP 455's `bspent`.
struct BspentMessage {
    BlockHash block_hash;
    std::vector<BspentCoin> coins; ///< input_index strictly increasing
    friend bool operator==(const BspentMessage&, const BspentMessage&) = default;
};

// ---- encoders: the payload bytes --------------------------------------------------------------

std::vector<uint8_t> EncodeVersion(const VersionMessage& m);
std::vector<uint8_t> EncodePing(uint64_t nonce);
std::vector<uint8_t> EncodeLocator(const LocatorMessage& m);
/// `headers`: each header followed by a transaction count of 0. Precondition: ≤ MAX_HEADERS_RESULTS.
std::vector<uint8_t> EncodeHeaders(std::span<const BlockHeader> headers);
std::vector<uint8_t> EncodeInv(std::span<const Inv> invs);
std::vector<uint8_t> EncodeReject(const RejectMessage& m);

std::vector<uint8_t> EncodeFeature(const FeatureMessage& m);
std::vector<uint8_t> EncodeGetBspent(const GetBspentMessage& m);
/// `bspent`. Precondition: input indexes strictly increasing and heights below 2^31 (what
/// DecodeBspent accepts). The payload may exceed MAX_PROTOCOL_MESSAGE_LENGTH: the sender checks.
std::vector<uint8_t> EncodeBspent(const BspentMessage& m);
/// Appends `script` in BIP 455's reconstructable form: its table's row when one matches the
/// script's exact shape (a P2PK key is not checked to be a point), else prefix 00 and the bytes.
void AppendReconstructableScript(std::vector<uint8_t>& out, std::span<const uint8_t> script);

/// A whole message (24-byte header + payload) for `magic`.
std::vector<uint8_t> MakeMessage(const std::array<uint8_t, 4>& magic, std::string_view command,
                                 std::span<const uint8_t> payload = {});

// ---- decoders: untrusted payload → Result ------------------------------------------------------

Result<VersionMessage> DecodeVersion(std::span<const uint8_t> payload);
/// ping / pong. (A pre-BIP31 empty ping is Errc::EndOfData.)
Result<uint64_t> DecodePing(std::span<const uint8_t> payload);
Result<LocatorMessage> DecodeLocator(std::span<const uint8_t> payload);
/// Headers; each header's transaction count is read (a CompactSize ≤ MAX_SIZE) and ignored, as Core.
Result<std::vector<BlockHeader>> DecodeHeaders(std::span<const uint8_t> payload);
Result<std::vector<Inv>> DecodeInv(std::span<const uint8_t> payload);
Result<RejectMessage> DecodeReject(std::span<const uint8_t> payload);
/// addr (v1 encoding). A count above MAX_ADDR_TO_SEND is Errc::SizeTooLarge (Core misbehaves the peer).
Result<std::vector<AddrEntry>> DecodeAddr(std::span<const uint8_t> payload);
std::vector<uint8_t> EncodeAddr(std::span<const AddrEntry> addrs);
/// A `block` message: one block with witness from the front of the payload; bytes after it are
/// ignored, as Core's `block` handler does (DecodeBlock, for a block alone, refuses them).
/// `used`, when given, gets the block's length: its bytes are then the block's serialization with
/// witness (the decoder refuses every other encoding of it).
Result<Block> DecodeBlockMessage(std::span<const uint8_t> payload, std::size_t* used = nullptr);

/// `feature`: an id of 4..80 bytes (else Errc::InvalidValue, or SizeTooLarge above 80), data of at
/// most 512 (SizeTooLarge); nothing after them (TrailingData).
Result<FeatureMessage> DecodeFeature(std::span<const uint8_t> payload);
/// `getbspent`: exactly 36 bytes (EndOfData, TrailingData).
Result<GetBspentMessage> DecodeGetBspent(std::span<const uint8_t> payload);
/// `bspent`, untrusted: a payload above MAX_PROTOCOL_MESSAGE_LENGTH is Errc::OversizedMessage; a
/// count above MAX_BSPENT_COINS SizeTooLarge, one the remaining bytes cannot hold EndOfData (both
/// before anything is allocated for it); input indexes not strictly increasing, or a script prefix
/// above 08, InvalidValue; a non-canonical CompactSize NonCanonicalCompactSize; bytes after the
/// last coin TrailingData. Whether the coins fit the block is checked a floor above
/// (swiftsync/spent_coins.h).
Result<BspentMessage> DecodeBspent(std::span<const uint8_t> payload);
/// One reconstructable script from the front of `in`; `used`, when given, gets its length. Errors
/// as DecodeBspent's. Prefix 00 is accepted for any script, also one a shorter row would fit.
Result<Script> DecodeReconstructableScript(std::span<const uint8_t> in, std::size_t* used = nullptr);

/// A block locator for a chain given as hashes by height (index = height): the tip, the 10 below,
/// then doubling steps back, and always the genesis block (Core's LocatorEntries). With `first`
/// (the tip of a branch off the chain, the last block asked for), it leads and is not repeated
/// after; at most MAX_LOCATOR_SZ hashes, as a peer accepts.
std::vector<BlockHash> MakeLocator(std::span<const BlockHash> chain, const std::optional<BlockHash>& first = std::nullopt);

} // namespace ibdkit
