// The none codec on a CUDA device (none_device.cu, built when configure
// finds CUDA): its payload is the elements, so encode and decode are copies
// and decode-accumulate is the lossless reduction (common/reduce_elements.h)
// on the device.  Every pointer is device memory; the work runs on `stream`
// and each call waits for it before returning its status.
#pragma once

#include "../common/reduce_elements.h"

#include <terse/codec.h>

#include <cstddef>

namespace terse_none {

// Whether this build has the device part.
bool cuda_built();
// bytes from src to dst (device memory, may be the same buffer).
int cuda_copy(void *dst, const void *src, size_t bytes, void *stream);
// dst[i] = dst[i] op src[i] for the job's count elements.
int cuda_reduce(const terse_codec::ReduceJob &job, void *stream);

}  // namespace terse_none
