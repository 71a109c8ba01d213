// MemKindCache's queries answered by the CUDA driver
// (cuPointerGetAttributes): which kind of memory a pointer is in.
//
//   MEMORY_TYPE  IS_MANAGED   kind
//   (unknown)    -            TERSE_MEM_HOST (plain host memory)
//   HOST         0            TERSE_MEM_CUDA_HOST (pinned or registered)
//   DEVICE       0            TERSE_MEM_CUDA (and any other type)
//   any          1            TERSE_MEM_CUDA_MANAGED
//
// Only with a loaded driver (cuda_driver() not null).
#pragma once

#include "device/mem_kind_cache.h"

#include "terse_build_config.h"

#ifdef TERSE_HAVE_CUDA
namespace terse::device {

MemQueryOps cuda_mem_query_ops();

}  // namespace terse::device
#endif
