#include "codec/frame.h"

#include "util/dtype.h"

#include <bit>
#include <cinttypes>
#include <cstring>

namespace terse {

// The wire format is little-endian and fields are copied as host integers.
static_assert(std::endian::native == std::endian::little,
              "terse frames are little-endian; add byte swapping for this host");

namespace {

// Field offsets, as documented in frame.h.
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 4;
constexpr size_t kOffDtype = 5;
constexpr size_t kOffFlags = 6;
constexpr size_t kOffReserved0 = 7;
constexpr size_t kOffCodec = 8;
constexpr size_t kOffContrib = 12;
constexpr size_t kOffCount = 16;
constexpr size_t kOffPayloadLen = 24;
constexpr size_t kOffCheck = 32;
constexpr size_t kOffReserved1 = 36;
constexpr size_t kCheckedHeader = 32;  // bytes of the header under the check value

template <typename T>
void put(uint8_t *p, size_t off, T v) {
    std::memcpy(p + off, &v, sizeof v);
}

template <typename T>
T get(const uint8_t *p, size_t off) {
    T v;
    std::memcpy(&v, p + off, sizeof v);
    return v;
}

}  // namespace

uint32_t frame_seal_header(void *dst, terse_dtype_t dtype, uint8_t flags, uint32_t codec_id,
                           uint32_t contributors, uint64_t count, uint64_t payload_len) {
    auto *p = static_cast<uint8_t *>(dst);
    put<uint32_t>(p, kOffMagic, kFrameMagic);
    put<uint8_t>(p, kOffVersion, kFrameVersion);
    put<uint8_t>(p, kOffDtype, static_cast<uint8_t>(dtype));
    put<uint8_t>(p, kOffFlags, flags);
    put<uint8_t>(p, kOffReserved0, 0);
    put<uint32_t>(p, kOffCodec, codec_id);
    put<uint32_t>(p, kOffContrib, contributors);
    put<uint64_t>(p, kOffCount, count);
    put<uint64_t>(p, kOffPayloadLen, payload_len);
    put<uint32_t>(p, kOffReserved1, 0);
    return crc32c(0, p, kCheckedHeader);
}

void frame_seal_check(void *dst, uint32_t check) { put<uint32_t>(static_cast<uint8_t *>(dst), kOffCheck, check); }

size_t frame_seal(void *dst, terse_dtype_t dtype, uint8_t flags, uint32_t codec_id, uint32_t contributors,
                  uint64_t count, uint64_t payload_len) {
    auto *p = static_cast<uint8_t *>(dst);
    uint32_t check = frame_seal_header(dst, dtype, flags, codec_id, contributors, count, payload_len);
    frame_seal_check(dst, crc32c(check, p + kFrameHeaderSize, payload_len));
    return kFrameHeaderSize + payload_len;
}

FrameInfo frame_info(const void *frame, size_t len) {
    const auto *p = static_cast<const uint8_t *>(frame);
    FrameInfo fi{};
    fi.dtype = static_cast<terse_dtype_t>(get<uint8_t>(p, kOffDtype));
    fi.flags = get<uint8_t>(p, kOffFlags);
    fi.codec_id = get<uint32_t>(p, kOffCodec);
    fi.contributors = get<uint32_t>(p, kOffContrib);
    fi.count = get<uint64_t>(p, kOffCount);
    fi.payload_len = len - kFrameHeaderSize;
    fi.payload = p + kFrameHeaderSize;
    return fi;
}

void frame_spoil_check(void *frame) { static_cast<uint8_t *>(frame)[kOffCheck] ^= 0x5A; }

// Fields are checked one by one so that the message names the first one
// that is wrong.
// A poison frame is accepted whatever its dtype, count and codec: the rank
// that failed may not have got far enough to know them, and its receivers
// must fail with "remote failure", not "corrupt frame".
Status frame_open_header(const void *buf, size_t len, terse_dtype_t expect_dtype, uint32_t expect_codec_id,
                         uint64_t expect_count, int peer, FrameInfo *out, uint32_t *check) {
    const auto *p = static_cast<const uint8_t *>(buf);
    if (p == nullptr || len < kFrameHeaderSize)
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: %zu bytes received, shorter than the %zu-byte header", peer,
                         p ? len : size_t{0}, kFrameHeaderSize);

    const uint32_t magic = get<uint32_t>(p, kOffMagic);
    if (magic != kFrameMagic)
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: magic 0x%08" PRIx32 ", expected 0x%08" PRIx32
                         " (\"TRSF\"); not a terse frame",
                         peer, magic, kFrameMagic);

    const unsigned version = get<uint8_t>(p, kOffVersion);
    if (version != kFrameVersion)
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: format version %u, this terse reads version %u "
                         "(mixed terse versions?)",
                         peer, version, unsigned{kFrameVersion});

    const unsigned flags = get<uint8_t>(p, kOffFlags);
    if (flags & ~unsigned{FRAME_RAW | FRAME_POISON})
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: unknown flags 0x%02x (known: raw 0x%02x, poison 0x%02x)", peer,
                         flags, unsigned{FRAME_RAW}, unsigned{FRAME_POISON});
    if ((flags & FRAME_RAW) && (flags & FRAME_POISON))
        return set_error(TERSE_ERR_CORRUPT, "frame from rank %d: flags 0x%02x mark the frame both raw and poison",
                         peer, flags);
    const bool poison = flags & FRAME_POISON;
    const bool raw = flags & FRAME_RAW;

    const unsigned res0 = get<uint8_t>(p, kOffReserved0);
    const uint32_t res1 = get<uint32_t>(p, kOffReserved1);
    if (res0 != 0 || res1 != 0)
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: reserved header fields are 0x%02x and 0x%08" PRIx32 ", expected 0",
                         peer, res0, res1);

    const unsigned dtype = get<uint8_t>(p, kOffDtype);
    if (!poison) {
        if (dtype_size(dtype) == 0)
            return set_error(TERSE_ERR_CORRUPT,
                             "frame from rank %d: dtype %u is not a terse dtype (valid: 1..%d)", peer, dtype,
                             int{TERSE_DTYPE_MAX_} - 1);
        if (dtype != static_cast<unsigned>(expect_dtype))
            return set_error(TERSE_ERR_CORRUPT, "frame from rank %d: dtype %s (%u), expected %s (%u)", peer,
                             dtype_name(dtype), dtype, dtype_name(static_cast<unsigned>(expect_dtype)),
                             static_cast<unsigned>(expect_dtype));
    }

    const uint64_t count = get<uint64_t>(p, kOffCount);
    if (!poison && count != expect_count)
        return set_error(TERSE_ERR_CORRUPT, "frame from rank %d: element count %" PRIu64 ", expected %" PRIu64,
                         peer, count, expect_count);

    const uint64_t payload_len = get<uint64_t>(p, kOffPayloadLen);
    const uint64_t received = len - kFrameHeaderSize;
    if (payload_len != received)
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: payload length %" PRIu64 " but %" PRIu64 " bytes received", peer,
                         payload_len, received);

    const uint32_t codec_id = get<uint32_t>(p, kOffCodec);
    if (!raw && !poison && codec_id != expect_codec_id)
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: codec id 0x%08" PRIx32 ", expected 0x%08" PRIx32
                         " (ranks use different codecs?)",
                         peer, codec_id, expect_codec_id);

    if (poison && payload_len != 0)
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: poison frame with payload length %" PRIu64 ", expected 0", peer,
                         payload_len);

    if (raw) {
        const uint64_t esize = dtype_size(dtype);
        // count * esize overflowing means it cannot match a received length.
        if (count > UINT64_MAX / esize || payload_len != count * esize)
            return set_error(TERSE_ERR_CORRUPT,
                             "frame from rank %d: raw payload length %" PRIu64 " for %" PRIu64
                             " %s elements, expected %" PRIu64 " bytes",
                             peer, payload_len, count, dtype_name(dtype),
                             count > UINT64_MAX / esize ? UINT64_MAX : count * esize);
    }

    *check = crc32c(0, p, kCheckedHeader);
    if (out) {
        out->dtype = static_cast<terse_dtype_t>(dtype);
        out->flags = static_cast<uint8_t>(flags);
        out->codec_id = codec_id;
        out->contributors = get<uint32_t>(p, kOffContrib);
        out->count = count;
        out->payload_len = payload_len;
        out->payload = p + kFrameHeaderSize;
    }
    return TERSE_OK;
}

Status frame_open_check(const void *buf, uint32_t check, int peer) {
    const auto *p = static_cast<const uint8_t *>(buf);
    const uint32_t stored = get<uint32_t>(p, kOffCheck);
    if (check != stored)
        return set_error(TERSE_ERR_CORRUPT,
                         "frame from rank %d: check value 0x%08" PRIx32 ", computed 0x%08" PRIx32 " over %" PRIu64
                         " payload bytes (data corrupted in transit)",
                         peer, stored, check, get<uint64_t>(p, kOffPayloadLen));
    return TERSE_OK;
}

// The check value comes last because a field-specific message says more
// than "check value mismatch" when a sender is buggy.
Status frame_open(const void *buf, size_t len, terse_dtype_t expect_dtype, uint32_t expect_codec_id,
                  uint64_t expect_count, int peer, FrameInfo *out) {
    FrameInfo fi;
    uint32_t check = 0;
    Status s = frame_open_header(buf, len, expect_dtype, expect_codec_id, expect_count, peer, &fi, &check);
    if (s != TERSE_OK) return s;
    check = crc32c(check, fi.payload, fi.payload_len);
    s = frame_open_check(buf, check, peer);
    if (s == TERSE_OK && out) *out = fi;
    return s;
}

}  // namespace terse
