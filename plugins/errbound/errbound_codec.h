// errbound: the codec behind the plugin callbacks (errbound_plugin.cc), as
// plain C++ so that tests can drive it directly, with a chosen code path.
#pragma once

#include "errbound_format.h"
#include "errbound_kernels.h"

#include "../common/isa.h"

#include <terse/codec.h>

#include <cstddef>

namespace terse_errbound {

enum Mode { kAbs = 0, kRel = 1, kNorm = 2 };

struct Params {
    Mode mode = kAbs;
    double bound = 0;  // abs: the bound itself; rel, norm: the fraction
    bool zstd = false;
    int zstd_level = 1;
};

int parse_params(const terse_codec_kv_t *kv, size_t nkv, Params *out, char *err, size_t errlen);
size_t params_string(const Params &p, char *buf, size_t buflen);
bool zstd_available();

struct Instance {
    Params p;
    terse_dtype_t dtype;
    int dindex;
    size_t elem_bytes;
    int nranks;
    terse_codec::Isa isa;
    const Kernels *k;
    terse_mem_kind_t mem = TERSE_MEM_HOST;  // TERSE_MEM_CUDA: the callbacks run errbound_device.h
    size_t max_chunk_count = 0;             // sizes the device workspace
};

int create_instance(const Params &p, const terse_codec_setup_t *setup, terse_codec::Isa isa, Instance **out,
                    char *err, size_t errlen);
void destroy_instance(Instance *inst);
// The memory kinds instances run on: host, and cuda in a build with the
// device kernels (errbound_device.h; zstd=off only).
uint32_t mem_kinds();

size_t max_encoded_size(const Instance &in, size_t count);
size_t stats_count(const Instance &in, size_t count);
int stats(const Instance &in, const void *src, size_t count, double *out);
// The absolute per-element bound the agreed stats give for a chunk of count
// elements (what the contract promises), or a negative value if they hold NaN/Inf.
double bound_for(const Instance &in, const double *agreed, size_t count);
int encode(const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
           const terse_codec_call_t *call);
int decode(const Instance &in, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
           terse_op_t op);
int combine(const Instance &in, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
            int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len);

const terse_codec_descriptor_t *descriptor();

}  // namespace terse_errbound
