// Frames and CRC32C: the layout on the wire, the round trip, and every way a
// received frame can be wrong.
#include "codec/crc32c.h"
#include "codec/frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using terse::FrameInfo;
using terse::kFrameHeaderSize;

constexpr uint32_t kCodec = 0x12345678u;
constexpr int kPeer = 3;

// A sealed frame of `count` float32 elements with a deterministic payload.
std::vector<uint8_t> make_frame(uint64_t count = 16, uint8_t flags = 0, uint64_t payload_len = 0,
                                terse_dtype_t dtype = TERSE_DTYPE_FLOAT32) {
    if (payload_len == 0 && !(flags & terse::FRAME_POISON)) payload_len = count * 4;
    std::vector<uint8_t> f(kFrameHeaderSize + payload_len);
    for (size_t i = 0; i < payload_len; i++) f[kFrameHeaderSize + i] = static_cast<uint8_t>(i * 37 + 11);
    size_t n = terse::frame_seal(f.data(), dtype, flags, (flags & terse::FRAME_RAW) ? 0 : kCodec, 5, count,
                                 payload_len);
    EXPECT_EQ(n, f.size());
    return f;
}

terse::Status open(const std::vector<uint8_t> &f, FrameInfo *info = nullptr, uint64_t count = 16,
                   terse_dtype_t dtype = TERSE_DTYPE_FLOAT32, uint32_t codec = kCodec, size_t len = SIZE_MAX) {
    FrameInfo scratch;
    return terse::frame_open(f.data(), len == SIZE_MAX ? f.size() : len, dtype, codec, count, kPeer,
                             info ? info : &scratch);
}

std::string msg() { return terse::last_error(); }

#define EXPECT_CORRUPT_WITH(expr, needle)                                       \
    do {                                                                        \
        terse::clear_error();                                                   \
        EXPECT_EQ((expr), TERSE_ERR_CORRUPT);                                   \
        EXPECT_NE(msg().find("frame from rank 3"), std::string::npos) << msg(); \
        EXPECT_NE(msg().find(needle), std::string::npos) << msg();              \
    } while (0)

// ------------------------------------------------------------ CRC32C

TEST(Crc32c, StandardCheckValue) {
    const char *s = "123456789";
    EXPECT_EQ(terse::crc32c(0, s, 9), 0xE3069283u);
    EXPECT_EQ(terse::crc32c_sw(0, s, 9), 0xE3069283u);
    if (terse::crc32c_hw_available()) {
        EXPECT_EQ(terse::crc32c_hw(0, s, 9), 0xE3069283u);
    }
}

// RFC 3720 (iSCSI) appendix B.4 vectors.
TEST(Crc32c, Rfc3720Vectors) {
    uint8_t buf[32];
    std::memset(buf, 0, sizeof buf);
    EXPECT_EQ(terse::crc32c(0, buf, 32), 0x8A9136AAu);
    std::memset(buf, 0xff, sizeof buf);
    EXPECT_EQ(terse::crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++) buf[i] = static_cast<uint8_t>(i);
    EXPECT_EQ(terse::crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++) buf[i] = static_cast<uint8_t>(31 - i);
    EXPECT_EQ(terse::crc32c(0, buf, 32), 0x113FDB5Cu);
    EXPECT_EQ(terse::crc32c_sw(0, buf, 32), 0x113FDB5Cu);
}

TEST(Crc32c, EmptyAndChaining) {
    EXPECT_EQ(terse::crc32c(0, nullptr, 0), 0u);
    EXPECT_EQ(terse::crc32c(0xE3069283u, nullptr, 0), 0xE3069283u);
    const char *s = "123456789";
    EXPECT_EQ(terse::crc32c(terse::crc32c(0, s, 4), s + 4, 5), 0xE3069283u);
}

// Bit-at-a-time reference, independent of both implementations.
uint32_t crc_reference(const uint8_t *p, size_t n) {
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++) c = (c >> 1) ^ ((c & 1u) ? 0x82F63B78u : 0u);
    }
    return ~c;
}

TEST(Crc32c, HardwareAndSoftwareAgree) {
    if (!terse::crc32c_hw_available()) GTEST_SKIP() << "CPU has no SSE4.2";
    std::mt19937_64 rng(42);
    std::vector<uint8_t> buf(200000 + 64);
    for (auto &b : buf) b = static_cast<uint8_t>(rng());
    // Lengths around every path boundary (8-byte tail, 3x256, 3x8192) plus random ones.
    std::vector<size_t> lens = {0,   1,    7,    8,     9,     15,    16,          767,         768,
                                769, 1535, 1536, 24575, 24576, 24577, 24576 + 768, 49152 + 769, 200000};
    for (int i = 0; i < 200; i++) lens.push_back(rng() % 100000);
    for (size_t len : lens)
        for (size_t align = 0; align < 8; align++) {
            const uint8_t *p = buf.data() + align;
            uint32_t seed = static_cast<uint32_t>(rng());
            ASSERT_EQ(terse::crc32c_hw(seed, p, len), terse::crc32c_sw(seed, p, len))
                << "len " << len << " align " << align;
        }
    for (size_t len : {size_t{0}, size_t{5}, size_t{100}, size_t{3000}, size_t{70001}})
        EXPECT_EQ(terse::crc32c_hw(0, buf.data() + 3, len), crc_reference(buf.data() + 3, len));
}

TEST(Crc32c, SoftwareMatchesReference) {
    std::mt19937_64 rng(7);
    std::vector<uint8_t> buf(5000);
    for (auto &b : buf) b = static_cast<uint8_t>(rng());
    for (size_t len = 0; len < 80; len++)
        for (size_t align = 0; align < 8; align++)
            ASSERT_EQ(terse::crc32c_sw(0, buf.data() + align, len), crc_reference(buf.data() + align, len));
    EXPECT_EQ(terse::crc32c_sw(0, buf.data() + 1, 4999), crc_reference(buf.data() + 1, 4999));
}

// ------------------------------------------------------------ layout

TEST(Frame, LayoutIsAsDocumented) {
    std::vector<uint8_t> f(kFrameHeaderSize + 8);
    for (int i = 0; i < 8; i++) f[kFrameHeaderSize + i] = static_cast<uint8_t>(0xA0 + i);
    ASSERT_EQ(terse::frame_seal(f.data(), TERSE_DTYPE_INT64, terse::FRAME_RAW, 0xAABBCCDDu, 7, 1, 8),
              kFrameHeaderSize + 8);
    EXPECT_EQ(std::memcmp(f.data(), "TRSF", 4), 0);
    EXPECT_EQ(f[4], 1);
    EXPECT_EQ(f[5], TERSE_DTYPE_INT64);
    EXPECT_EQ(f[6], terse::FRAME_RAW);
    EXPECT_EQ(f[7], 0);
    const uint8_t codec[4] = {0xDD, 0xCC, 0xBB, 0xAA};
    EXPECT_EQ(std::memcmp(&f[8], codec, 4), 0);
    const uint8_t contrib[4] = {7, 0, 0, 0};
    EXPECT_EQ(std::memcmp(&f[12], contrib, 4), 0);
    const uint8_t count[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(std::memcmp(&f[16], count, 8), 0);
    const uint8_t plen[8] = {8, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(std::memcmp(&f[24], plen, 8), 0);
    uint32_t expect = crc_reference(f.data(), 32);
    std::vector<uint8_t> covered(f.begin(), f.begin() + 32);
    covered.insert(covered.end(), f.begin() + kFrameHeaderSize, f.end());
    expect = crc_reference(covered.data(), covered.size());
    uint32_t stored;
    std::memcpy(&stored, &f[32], 4);
    EXPECT_EQ(stored, expect);
    const uint8_t zero[4] = {0, 0, 0, 0};
    EXPECT_EQ(std::memcmp(&f[36], zero, 4), 0);
}

// ------------------------------------------------------------ round trip

TEST(Frame, RoundTripEncoded) {
    auto f = make_frame(16);
    FrameInfo info{};
    ASSERT_EQ(open(f, &info), TERSE_OK) << msg();
    EXPECT_EQ(info.dtype, TERSE_DTYPE_FLOAT32);
    EXPECT_EQ(info.flags, 0);
    EXPECT_EQ(info.codec_id, kCodec);
    EXPECT_EQ(info.contributors, 5u);
    EXPECT_EQ(info.count, 16u);
    EXPECT_EQ(info.payload_len, 64u);
    EXPECT_EQ(info.payload, f.data() + kFrameHeaderSize);
}

// frame_info reads back what frame_seal wrote, as frame_open does.
TEST(Frame, InfoOfASealedFrame) {
    auto f = make_frame(16, terse::FRAME_RAW);
    FrameInfo opened{};
    ASSERT_EQ(open(f, &opened, 16, TERSE_DTYPE_FLOAT32, 0), TERSE_OK) << msg();
    FrameInfo info = terse::frame_info(f.data(), f.size());
    EXPECT_EQ(info.dtype, opened.dtype);
    EXPECT_EQ(info.flags, terse::FRAME_RAW);
    EXPECT_EQ(info.codec_id, 0u);
    EXPECT_EQ(info.contributors, 5u);
    EXPECT_EQ(info.count, 16u);
    EXPECT_EQ(info.payload_len, 64u);
    EXPECT_EQ(info.payload, f.data() + kFrameHeaderSize);
}

TEST(Frame, SpoiledCheckValueIsCorrupt) {
    auto f = make_frame(16);
    terse::frame_spoil_check(f.data());
    EXPECT_CORRUPT_WITH(open(f), "check value");
}

TEST(Frame, RoundTripEncodedPayloadSizeIsFree) {
    // A codec's payload length is its own business (here 10 bytes for 16 floats).
    auto f = make_frame(16, 0, 10);
    FrameInfo info{};
    ASSERT_EQ(open(f, &info), TERSE_OK) << msg();
    EXPECT_EQ(info.payload_len, 10u);
}

TEST(Frame, RoundTripEmpty) {
    std::vector<uint8_t> f(kFrameHeaderSize);
    terse::frame_seal(f.data(), TERSE_DTYPE_FLOAT64, 0, kCodec, 1, 0, 0);
    FrameInfo info{};
    ASSERT_EQ(open(f, &info, 0, TERSE_DTYPE_FLOAT64), TERSE_OK) << msg();
    EXPECT_EQ(info.payload_len, 0u);
}

TEST(Frame, RawIgnoresCodecId) {
    auto f = make_frame(16, terse::FRAME_RAW);
    FrameInfo info{};
    ASSERT_EQ(open(f, &info, 16, TERSE_DTYPE_FLOAT32, 0xDEADBEEFu), TERSE_OK) << msg();
    EXPECT_EQ(info.flags, terse::FRAME_RAW);
}

TEST(Frame, RawPayloadMustMatchCount) {
    auto f = make_frame(16, terse::FRAME_RAW, 60);
    EXPECT_CORRUPT_WITH(open(f), "raw payload length 60");
    for (auto dt : {TERSE_DTYPE_FLOAT64, TERSE_DTYPE_INT64}) {
        auto g = make_frame(3, terse::FRAME_RAW, 24, dt);
        EXPECT_EQ(open(g, nullptr, 3, dt), TERSE_OK) << msg();
    }
    for (auto dt : {TERSE_DTYPE_FLOAT16, TERSE_DTYPE_BFLOAT16}) {
        auto g = make_frame(3, terse::FRAME_RAW, 6, dt);
        EXPECT_EQ(open(g, nullptr, 3, dt), TERSE_OK) << msg();
    }
    // A count whose byte size overflows 64 bits can never match.
    auto h = make_frame(UINT64_MAX / 2, terse::FRAME_RAW, 8);
    EXPECT_CORRUPT_WITH(open(h, nullptr, UINT64_MAX / 2), "raw payload length");
}

TEST(Frame, PoisonRoundTrip) {
    auto f = make_frame(0, terse::FRAME_POISON);
    FrameInfo info{};
    // Accepted whatever dtype, count and codec the receiver expects.
    ASSERT_EQ(open(f, &info, 999, TERSE_DTYPE_INT32, 1), TERSE_OK) << msg();
    EXPECT_EQ(info.flags, terse::FRAME_POISON);
    EXPECT_EQ(info.payload_len, 0u);
}

TEST(Frame, PoisonWithPayloadIsCorrupt) {
    auto f = make_frame(4, terse::FRAME_POISON, 8);
    EXPECT_CORRUPT_WITH(open(f, nullptr, 4), "poison frame with payload length 8");
}

// ------------------------------------------------------------ corruption

TEST(Frame, ReceiverMismatches) {
    auto f = make_frame(16);
    EXPECT_CORRUPT_WITH(open(f, nullptr, 17), "element count 16, expected 17");
    EXPECT_CORRUPT_WITH(open(f, nullptr, 16, TERSE_DTYPE_FLOAT64), "dtype float32 (1), expected float64 (2)");
    EXPECT_CORRUPT_WITH(open(f, nullptr, 16, TERSE_DTYPE_FLOAT32, 0x0badc0deu),
                        "codec id 0x12345678, expected 0x0badc0de");
}

TEST(Frame, MessageFromBrief) {
    auto f = make_frame(25);  // 100-byte payload
    EXPECT_CORRUPT_WITH(open(f, nullptr, 25, TERSE_DTYPE_FLOAT32, kCodec, kFrameHeaderSize + 60),
                        "payload length 100 but 60 bytes received");
}

TEST(Frame, TruncatedAtEveryLength) {
    auto f = make_frame(16);
    for (size_t len = 0; len < f.size(); len++) {
        terse::clear_error();
        ASSERT_EQ(open(f, nullptr, 16, TERSE_DTYPE_FLOAT32, kCodec, len), TERSE_ERR_CORRUPT) << len;
        ASSERT_NE(msg().find("frame from rank 3"), std::string::npos) << msg();
        if (len < kFrameHeaderSize)
            ASSERT_NE(msg().find("shorter than the 40-byte header"), std::string::npos) << msg();
        else ASSERT_NE(msg().find("payload length 64 but"), std::string::npos) << msg();
    }
}

TEST(Frame, TrailingBytesAreCorrupt) {
    auto f = make_frame(16);
    f.push_back(0);
    EXPECT_CORRUPT_WITH(open(f), "payload length 64 but 65 bytes received");
}

TEST(Frame, NullBuffer) {
    FrameInfo info;
    EXPECT_EQ(terse::frame_open(nullptr, 100, TERSE_DTYPE_FLOAT32, kCodec, 16, kPeer, &info), TERSE_ERR_CORRUPT);
}

// The field a flipped byte at offset `off` must be reported as.
const char *field_at(size_t off) {
    if (off < 4) return "magic";
    if (off == 4) return "version";
    if (off == 5) return "dtype";
    if (off == 6) return "flags";
    if (off == 7) return "reserved";
    if (off < 12) return "codec id";
    if (off < 16) return "check value";  // contributors: only the check value can tell
    if (off < 24) return "element count";
    if (off < 32) return "payload length";
    if (off < 36) return "check value";
    return "reserved";
}

TEST(Frame, EveryHeaderBitFlipIsCaught) {
    const auto good = make_frame(16);
    for (size_t off = 0; off < kFrameHeaderSize; off++)
        for (int bit = 0; bit < 8; bit++) {
            auto f = good;
            f[off] ^= static_cast<uint8_t>(1u << bit);
            terse::clear_error();
            ASSERT_EQ(open(f), TERSE_ERR_CORRUPT) << "byte " << off << " bit " << bit;
            const char *want = field_at(off);
            // A flipped flag bit that happens to be a known flag changes what
            // the frame claims to be; it is caught by a later field instead.
            if (off == 6 && (1u << bit) == terse::FRAME_RAW) want = "check value";
            if (off == 6 && (1u << bit) == terse::FRAME_POISON) want = "poison frame with payload";
            ASSERT_NE(msg().find(want), std::string::npos) << "byte " << off << " bit " << bit << ": " << msg();
        }
}

TEST(Frame, EveryPayloadBitFlipIsCaught) {
    const auto good = make_frame(4);
    for (size_t off = kFrameHeaderSize; off < good.size(); off++)
        for (int bit = 0; bit < 8; bit++) {
            auto f = good;
            f[off] ^= static_cast<uint8_t>(1u << bit);
            terse::clear_error();
            ASSERT_EQ(open(f, nullptr, 4), TERSE_ERR_CORRUPT);
            ASSERT_NE(msg().find("check value"), std::string::npos) << msg();
        }
}

TEST(Frame, SpecificFieldMessages) {
    auto f = make_frame(16);
    auto g = f;
    g[4] = 2;
    EXPECT_CORRUPT_WITH(open(g), "format version 2, this terse reads version 1");
    g = f;
    g[5] = 9;
    EXPECT_CORRUPT_WITH(open(g), "dtype 9 is not a terse dtype");
    g = f;
    g[5] = 0;
    EXPECT_CORRUPT_WITH(open(g), "dtype 0 is not a terse dtype");
    g = f;
    g[6] = 0x80;
    EXPECT_CORRUPT_WITH(open(g), "unknown flags 0x80");
    g = f;
    g[6] = terse::FRAME_RAW | terse::FRAME_POISON;
    EXPECT_CORRUPT_WITH(open(g), "both raw and poison");
    g = f;
    std::memcpy(g.data(), "XXXX", 4);
    EXPECT_CORRUPT_WITH(open(g), "not a terse frame");
}

}  // namespace
