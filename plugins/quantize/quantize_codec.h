// quantize: the codec behind the plugin callbacks (quantize_plugin.cc), as
// plain C++ so that tests can drive it directly, with a chosen code path.
#pragma once

#include "quantize_format.h"
#include "quantize_kernels.h"

#include "../common/isa.h"

#include <terse/codec.h>

#include <cstddef>

namespace terse_quantize {

constexpr int kDefaultBits = 8;

struct Params {
    int bits = kDefaultBits;
    int log2_block = default_log2_block(kDefaultBits);  // parse: default_log2_block(bits) unless given
    Rounding rounding = kNearest;
};

int parse_params(const terse_codec_kv_t *kv, size_t nkv, Params *out, char *err, size_t errlen);
size_t params_string(const Params &p, char *buf, size_t buflen);

struct Instance {
    Params p;
    terse_dtype_t dtype;
    int dindex;  // terse_codec::dtype_index
    size_t elem_bytes;
    int nranks;
    terse_codec::Isa isa;
    const Kernels *k;
    terse_mem_kind_t mem = TERSE_MEM_HOST;  // TERSE_MEM_CUDA: the callbacks run quantize_device.h
    size_t max_chunk_count = 0;             // sizes the device workspace
};

// isa: the code path to run; create fails if this CPU lacks it.
int create_instance(const Params &p, const terse_codec_setup_t *setup, terse_codec::Isa isa, Instance **out,
                    char *err, size_t errlen);
void destroy_instance(Instance *inst);
// The memory kinds instances run on: host, and cuda in a build with the
// device kernels (quantize_device.h).
uint32_t mem_kinds();

// The header of a single rank's payload of count elements: the host and
// the device encoders write the same one.
inline Header single_rank_header(const Params &p, int scale_bytes, size_t count) {
    Header h;
    h.bits = static_cast<uint8_t>(p.bits);
    h.width = static_cast<uint8_t>(p.bits);
    h.log2_block = static_cast<uint8_t>(p.log2_block);
    h.scale_bytes = static_cast<uint8_t>(scale_bytes);
    h.rounding = p.rounding;
    h.contributors = 1;
    h.count = count;
    return h;
}

size_t max_encoded_size(const Instance &in, size_t count);
size_t stats_count(const Instance &in, size_t count);
int stats(const Instance &in, const void *src, size_t count, double *out);
int encode(const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
           const terse_codec_call_t *call);
int decode(const Instance &in, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
           terse_op_t op);
int combine(const Instance &in, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
            int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len);

// The plugin descriptor (exported by quantize_entry.cc).
const terse_codec_descriptor_t *descriptor();

}  // namespace terse_quantize
