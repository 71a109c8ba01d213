// errbound on a CUDA device: the callbacks of a TERSE_MEM_CUDA instance
// (errbound_device.cu, built when configure finds CUDA).  Every pointer is
// device memory; the work runs on call->stream in call->workspace
// (dev::workspace_size bytes), and each call waits for its stream before it
// returns its status.  Same statuses and bytes as errbound_codec.h's, but
// for the zstd stage, which has no device side: device instances exist only
// with zstd=off, and a zstd-compressed payload is refused
// (TERSE_CODEC_ERR_UNSUPPORTED).
#pragma once

#include "errbound_codec.h"

#include <terse/codec.h>

#include <cstddef>

namespace terse_errbound {
namespace dev {

// Whether this build has the device kernels (configure found CUDA).
bool cuda_built();

int cuda_stats(const Instance &in, const void *src, size_t count, double *out, const terse_codec_call_t *call);
int cuda_encode(const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                const terse_codec_call_t *call);
int cuda_decode(const Instance &in, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                terse_op_t op, const terse_codec_call_t *call);
int cuda_combine(const Instance &in, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
                 int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len,
                 const terse_codec_call_t *call);

}  // namespace dev
}  // namespace terse_errbound
