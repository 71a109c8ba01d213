// topk on a CUDA device: the callbacks of a TERSE_MEM_CUDA instance
// (topk_device.cu, built when configure finds CUDA).  Every pointer is
// device memory; the work runs on call->stream in call->workspace
// (dev::workspace_size bytes), and each call waits for its stream before it
// returns its status.  Same statuses and bytes as topk_codec.cc's; a
// payload keeping more elements than the instance's parameters keep of its
// largest chunk has no room in the workspace and is refused
// (TERSE_CODEC_ERR_UNSUPPORTED).
#pragma once

#include "topk_device_ops.h"

#include <terse/codec.h>

#include <cstddef>

namespace terse_topk {
namespace dev {

// Whether this build has the device kernels (configure found CUDA).
bool cuda_built();

int cuda_encode(const Setup &s, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                const terse_codec_call_t *call);
int cuda_decode(const Setup &s, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                terse_op_t op, const terse_codec_call_t *call);

}  // namespace dev
}  // namespace terse_topk
