/* What the multi-rank device-buffer test programs share
 * (test_device_staging_mpi.c, test_device_engine_mpi.c): the CUDA driver
 * loaded with dlopen, so that one program serves the fake driver of
 * tests/fake_cuda under make check and a real one on a GPU machine
 * (tests/gpu/device-mpi-check.sh); device buffers; the mib= list of large
 * sizes; and a timed MPI_Allreduce loop.  For one translation unit per
 * program (static state). */
#ifndef TERSE_TESTS_DEVICE_MPI_DRIVER_H
#define TERSE_TESTS_DEVICE_MPI_DRIVER_H

#include "mpi_check.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef int cu_result;
typedef unsigned long long cu_ptr;
typedef int cu_device;

static struct {
    cu_result (*init)(unsigned);
    cu_result (*device_count)(int *);
    cu_result (*device_get)(cu_device *, int);
    cu_result (*device_name)(char *, int, cu_device);
    cu_result (*primary_retain)(void **, cu_device);
    cu_result (*alloc)(cu_ptr *, size_t);
    cu_result (*free)(cu_ptr);
    cu_result (*htod)(cu_ptr, const void *, size_t);
    cu_result (*dtoh)(void *, cu_ptr, size_t);
    cu_result (*push)(void *);
    void *(*context)(void);
} cu;

#define DEVICE_MPI_RESOLVE(field, name) cu.field = (__typeof__(cu.field))dlsym(lib, name)

/* The fake driver hands out its one context; a real one needs cuInit and
 * the device's primary context, the one the CUDA runtime would use (ranks
 * share device rank % count).  Rank 0 prints a "driver: " line, which the
 * scripts check.  Returns the library, for a program's own lookups. */
static void *load_driver(int rank) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "libcuda.so.1 (a CUDA driver, or the fake one of tests/fake_cuda) not found: %s",
          dlerror());
    DEVICE_MPI_RESOLVE(context, "fake_cuda_context");
    DEVICE_MPI_RESOLVE(alloc, "cuMemAlloc_v2");
    DEVICE_MPI_RESOLVE(free, "cuMemFree_v2");
    DEVICE_MPI_RESOLVE(htod, "cuMemcpyHtoD_v2");
    DEVICE_MPI_RESOLVE(dtoh, "cuMemcpyDtoH_v2");
    DEVICE_MPI_RESOLVE(push, "cuCtxPushCurrent_v2");
    CHECK(cu.alloc && cu.free && cu.htod && cu.dtoh && cu.push, "driver entry points (cuMemAlloc_v2 ...)");
    void *context = NULL;
    if (cu.context) {
        context = cu.context();
        if (rank == 0) printf("driver: the fake CUDA driver of tests/fake_cuda\n");
    } else {
        DEVICE_MPI_RESOLVE(init, "cuInit");
        DEVICE_MPI_RESOLVE(device_count, "cuDeviceGetCount");
        DEVICE_MPI_RESOLVE(device_get, "cuDeviceGet");
        DEVICE_MPI_RESOLVE(device_name, "cuDeviceGetName");
        DEVICE_MPI_RESOLVE(primary_retain, "cuDevicePrimaryCtxRetain");
        CHECK(cu.init && cu.device_count && cu.device_get && cu.device_name && cu.primary_retain,
              "driver entry points (cuInit ...)");
        int count = 0;
        CHECK(cu.init(0) == 0, "cuInit");
        CHECK(cu.device_count(&count) == 0 && count > 0, "cuDeviceGetCount: no CUDA device");
        cu_device dev = 0;
        CHECK(cu.device_get(&dev, rank % count) == 0, "cuDeviceGet %d", rank % count);
        CHECK(cu.primary_retain(&context, dev) == 0, "cuDevicePrimaryCtxRetain");
        char name[128] = "";
        cu.device_name(name, (int)sizeof name, dev);
        if (rank == 0)
            printf("driver: CUDA, %d device(s), rank 0 on device %d (%s)\n", count, rank % count, name);
    }
    /* The application's context, current on its thread as after cudaSetDevice. */
    CHECK(cu.push(context) == 0, "cuCtxPushCurrent");
    return lib;
}

static void *dev_alloc(size_t bytes) {
    cu_ptr p = 0;
    CHECK(cu.alloc(&p, bytes) == 0, "cuMemAlloc %zu", bytes);
    return (void *)(uintptr_t)p;
}
static void dev_free(void *p) { CHECK(cu.free((cu_ptr)(uintptr_t)p) == 0, "cuMemFree"); }
static void to_dev(void *d, const void *h, size_t n) { CHECK(cu.htod((cu_ptr)(uintptr_t)d, h, n) == 0, "HtoD"); }
static void from_dev(void *h, const void *d, size_t n) {
    CHECK(cu.dtoh(h, (cu_ptr)(uintptr_t)d, n) == 0, "DtoH");
}

/* The sizes of mib=N,N,... (after "mib="), at most max of them. */
static int parse_mib(const char *list, int *mib, int max) {
    int n = 0;
    const char *p = list;
    while (*p) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        CHECK(end != p && v >= 1 && v <= 256 && (*end == ',' || *end == '\0') && n < max,
              "mib=%s: expected up to %d sizes in MiB, 1 to 256, separated by commas", list, max);
        mib[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return n;
}

/* Microseconds per MPI_Allreduce of count floats from send to recv, the
 * slowest rank's mean over iters calls after one unmeasured call; through
 * terse, or with PMPI when pmpi. */
static double time_allreduce(const void *send, void *recv, int count, int iters, int pmpi) {
    int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm) = pmpi ? PMPI_Allreduce
                                                                                       : MPI_Allreduce;
    CHECK(allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "timed allreduce");
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
        CHECK(allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "timed allreduce");
    double mine = (MPI_Wtime() - t0) / iters * 1e6, slowest = 0;
    PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

#endif
