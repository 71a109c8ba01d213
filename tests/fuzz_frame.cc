// libFuzzer target: what a receiver does with bytes off the wire.
// frame_open() must reject anything malformed without reading past len, and
// the none codec's decode must never write past the count it was given.
//
// Input layout: byte 0 selects options, the rest is the received message.
//   bit 0: recompute the check value first (so mutations reach the decoder
//          instead of stopping at the CRC)
//   bit 1: expect exactly what the header claims (dtype, count, codec id),
//          else expect fixed values
//   bits 2-3: op for an accumulating decode (3 = plain decode)
#include "codec/frame.h"

#include <terse/codec.h>

#include <cstring>
#include <vector>

extern "C" const terse_codec_descriptor_t *terse_codec_entry_v1(void);

namespace {

size_t none_elem_size(unsigned dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32:
    case TERSE_DTYPE_INT32: return 4;
    case TERSE_DTYPE_FLOAT64:
    case TERSE_DTYPE_INT64: return 8;
    default: return 0;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const uint8_t opts = data[0];
    // A private copy, exactly the message length, so ASan sees any over-read.
    std::vector<uint8_t> msg(data + 1, data + size);
    const size_t len = msg.size();

    if ((opts & 1u) && len >= terse::kFrameHeaderSize) {
        uint64_t plen;
        std::memcpy(&plen, msg.data() + 24, 8);
        if (plen <= len - terse::kFrameHeaderSize) {
            uint32_t c = terse::crc32c(0, msg.data(), 32);
            c = terse::crc32c(c, msg.data() + terse::kFrameHeaderSize, plen);
            std::memcpy(msg.data() + 32, &c, 4);
        }
    }

    terse_dtype_t dtype = TERSE_DTYPE_FLOAT32;
    uint32_t codec_id = terse::crc32c(0, "none", 4);
    uint64_t count = 16;
    if ((opts & 2u) && len >= terse::kFrameHeaderSize) {
        // Only values of the enum: the engine never passes anything else.
        if (msg[5] >= 1 && msg[5] < TERSE_DTYPE_MAX_) dtype = static_cast<terse_dtype_t>(msg[5]);
        std::memcpy(&codec_id, msg.data() + 8, 4);
        std::memcpy(&count, msg.data() + 16, 8);
    }

    terse::FrameInfo info{};
    if (terse::frame_open(msg.empty() ? nullptr : msg.data(), len, dtype, codec_id, count, 1, &info) != TERSE_OK)
        return 0;
    if (info.flags & terse::FRAME_POISON) return 0;
    const size_t esize = none_elem_size(info.dtype);
    if (esize == 0) return 0;

    static const terse_codec_descriptor_t *desc = terse_codec_entry_v1();
    terse_codec_setup_t setup{};
    setup.struct_size = sizeof setup;
    setup.dtype = info.dtype;
    setup.mem_kind = TERSE_MEM_HOST;
    setup.nranks = 2;
    setup.max_chunk_count = info.count;
    void *inst = nullptr;
    char err[256];
    if (desc->create(nullptr, &setup, &inst, err, sizeof err) != TERSE_CODEC_OK) __builtin_trap();

    // Sized by the payload, not the claimed count: a decoder that trusted a
    // count larger than the payload would write out of bounds here.
    std::vector<uint8_t> dst(info.payload_len / esize * esize);
    const unsigned opbits = (opts >> 2) & 3u;
    const int rc = desc->decode(inst, info.payload, info.payload_len, dst.data(), info.count, opbits != 3,
                                static_cast<terse_op_t>(opbits == 3 ? 0 : opbits), nullptr);
    // frame_open guarantees payload_len == count * size for raw frames, and
    // none accepts exactly that, so raw frames must always decode.
    if ((info.flags & terse::FRAME_RAW) && rc != TERSE_CODEC_OK) __builtin_trap();
    if (rc == TERSE_CODEC_OK && info.count * esize != info.payload_len) __builtin_trap();
    desc->destroy(inst);
    return 0;
}
