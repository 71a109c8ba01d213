#include "device/cuda_mem_query.h"

#ifdef TERSE_HAVE_CUDA
#include "device/cuda_driver.h"

namespace terse::device {

namespace {

// Unlike cuPointerGetAttribute, the plural call does not fail on a pointer
// the driver does not know: it leaves the values zero.  It does fail
// before the process initialised CUDA (CUDA_ERROR_NOT_INITIALIZED): no
// device memory can exist then.
uint64_t driver_buffer_id(const void *p) {
    CUpointer_attribute attr[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID};
    unsigned long long id = 0;
    void *data[] = {&id};
    const CudaDriver *d = cuda_driver();
    if (!d || d->pointer_get_attributes(1, attr, data, CUdeviceptr(p)) != CUDA_SUCCESS) return 0;
    return id;
}

bool driver_allocation(const void *p, MemRange *out) {
    CUpointer_attribute attr[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                  CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                  CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    unsigned int type = 0;
    int managed = 0;
    unsigned long long id = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    void *data[] = {&type, &managed, &id, &start, &size};
    const CudaDriver *d = cuda_driver();
    if (!d || d->pointer_get_attributes(5, attr, data, CUdeviceptr(p)) != CUDA_SUCCESS || id == 0) return false;
    // A type this table does not name is taken as device memory: the one
    // answer that never lets the CPU or a host-only library touch it.
    if (managed) out->kind = TERSE_MEM_CUDA_MANAGED;
    else if (type == CU_MEMORYTYPE_HOST) out->kind = TERSE_MEM_CUDA_HOST;
    else out->kind = TERSE_MEM_CUDA;
    out->buffer_id = id;
    out->start = uintptr_t(start);
    out->size = size;
    return true;
}

}  // namespace

MemQueryOps cuda_mem_query_ops() { return MemQueryOps{driver_buffer_id, driver_allocation}; }

}  // namespace terse::device
#endif
