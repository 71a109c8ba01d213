/* MPI collectives on CUDA device buffers, staged through pinned host memory.
 * One source for two drivers.  Under the fake CUDA driver (tests/fake_cuda:
 * "device memory" is PROT_NONE to every host code but the driver's copies,
 * so the MPI library or terse's engine touching it crashes the test), run
 * by test_device_staging.sh under make check.  Under a real driver (any
 * libcuda.so.1 without the fake's fake_cuda_context), run by the prepared
 * device check (tests/gpu/device-mpi-check.sh): the ranks share device 0
 * (rank modulo the device count), each in its device's primary context.
 * Every call is made three times on the same inputs: on device buffers
 * through terse, on host buffers through terse, and with PMPI on host
 * buffers.  The device result must equal the host one through terse bit
 * for bit (the same engine and codec ran on the same bytes), and PMPI's:
 * bitwise with a lossless codec or when the call goes to the MPI library,
 * within the codec's bound otherwise.
 *
 * Usage: test_device_staging_mpi lossless|quantize8 [thread] [mib=N,N,...]
 * mib=: after the fixed checks, an MPI_Allreduce of each of these sizes in
 * MiB (at most 256), checked as above, then timed on host and on device
 * buffers through terse and with PMPI: rank 0 prints one "timing" line per
 * size (microseconds per call, the slowest rank's mean).
 * Rank 0 prints "staged calls N bytes B": what the TERSE_STATS process line
 * must count (test_device_staging.sh and device-mpi-check.sh check it). */
#include "device_mpi_driver.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, lossy;
static unsigned long long staged_calls, staged_bytes;

static void fill(float *x, size_t n, int salt) {
    for (size_t i = 0; i < n; ++i) {
        unsigned h = (unsigned)(i * 2654435761u + (unsigned)(rank + 1) * 40503u + (unsigned)salt * 977u);
        /* Integers add exactly in any order; the lossy codec gets [-1, 1). */
        x[i] = lossy ? (float)((h % 20001) / 10000.0 - 1.0) : (float)((int)(h % 2001) - 1000);
    }
}

/* got (device, through terse) against host (host buffers, through terse)
 * and ref (PMPI): exact_ref when the codec is lossless or the MPI library
 * served the call. */
static void compare(const char *what, const float *got, const float *host, const float *ref, size_t n,
                    int exact_ref) {
    CHECK(memcmp(got, host, n * sizeof(float)) == 0, "%s: device result differs from the host one", what);
    /* quantize:bits=8: each rank's rounding is at most half a step of
     * max|x|/127; the sum of size of them, doubled for slack. */
    const double bound = exact_ref || !lossy ? 0.0 : size / 127.0;
    for (size_t i = 0; i < n; ++i) {
        if (exact_ref || !lossy)
            CHECK(memcmp(&got[i], &ref[i], sizeof(float)) == 0, "%s: elem %zu: %.9g != PMPI %.9g", what, i,
                  got[i], ref[i]);
        else
            CHECK(fabs((double)got[i] - ref[i]) <= bound, "%s: elem %zu: %.9g vs PMPI %.9g (bound %g)", what, i,
                  got[i], ref[i], bound);
    }
}

static void staged(unsigned long long in, unsigned long long out) {
    ++staged_calls;
    staged_bytes += in + out;
}

static void check_allreduce(int count, int in_place, MPI_Op op, int exact_ref, int nb) {
    const size_t bytes = (size_t)count * sizeof(float);
    float *in = malloc(bytes), *host = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    fill(in, count, count + in_place);
    if (op == MPI_PROD)
        for (int i = 0; i < count; ++i) in[i] = 1.0f + (float)((i + rank) % 3) * 0.5f;
    CHECK(PMPI_Allreduce(in, ref, count, MPI_FLOAT, op, MPI_COMM_WORLD) == MPI_SUCCESS, "PMPI_Allreduce");
    CHECK(MPI_Allreduce(in, host, count, MPI_FLOAT, op, MPI_COMM_WORLD) == MPI_SUCCESS, "host MPI_Allreduce");
    float *d_in = dev_alloc(bytes), *d_out = dev_alloc(bytes);
    to_dev(in_place ? d_out : d_in, in, bytes);
    const void *send = in_place ? MPI_IN_PLACE : d_in;
    if (!nb) {
        CHECK(MPI_Allreduce(send, d_out, count, MPI_FLOAT, op, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
    } else {
        MPI_Request req;
        CHECK(MPI_Iallreduce(send, d_out, count, MPI_FLOAT, op, MPI_COMM_WORLD, &req) == MPI_SUCCESS,
              "MPI_Iallreduce");
        if (nb == 1) {
            CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
        } else {
            int done = 0;
            while (!done) CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test");
        }
        CHECK(req == MPI_REQUEST_NULL, "request freed by its completion");
    }
    staged(bytes, bytes);
    from_dev(got, d_out, bytes);
    char what[96];
    snprintf(what, sizeof what, "allreduce count %d in_place %d %s nb %d", count, in_place,
             op == MPI_PROD ? "prod" : "sum", nb);
    compare(what, got, host, ref, count, exact_ref);
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(host), free(ref), free(got);
}

static void check_reduce_scatter_block(int count, int in_place, int nb) {
    const size_t n = (size_t)count * size, bytes = n * sizeof(float), out = (size_t)count * sizeof(float);
    float *in = malloc(bytes), *host = malloc(bytes), *ref = malloc(out), *got = malloc(bytes);
    fill(in, n, 7 + in_place);
    CHECK(PMPI_Reduce_scatter_block(in, ref, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "PMPI");
    float *d_in = dev_alloc(bytes), *d_out = dev_alloc(bytes);
    if (in_place) {
        memcpy(host, in, bytes);
        CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, host, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "host rsb");
        to_dev(d_out, in, bytes);
    } else {
        CHECK(MPI_Reduce_scatter_block(in, host, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
              "host rsb");
        to_dev(d_in, in, bytes);
    }
    const void *send = in_place ? MPI_IN_PLACE : d_in;
    if (nb) {
        MPI_Request req;
        CHECK(MPI_Ireduce_scatter_block(send, d_out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req) ==
                  MPI_SUCCESS,
              "MPI_Ireduce_scatter_block");
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
    } else {
        CHECK(MPI_Reduce_scatter_block(send, d_out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
              "MPI_Reduce_scatter_block");
    }
    /* In place the whole input span is the receive region, copied both ways. */
    staged(bytes, in_place ? bytes : out);
    from_dev(got, d_out, out);
    char what[96];
    snprintf(what, sizeof what, "reduce_scatter_block count %d in_place %d nb %d", count, in_place, nb);
    compare(what, got, host, ref, count, 0);
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(host), free(ref), free(got);
}

static void check_allgather(int count, int in_place) {
    const size_t n = (size_t)count * size, bytes = n * sizeof(float), mine = (size_t)count * sizeof(float);
    float *in = malloc(mine), *host = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    fill(in, count, 11);
    CHECK(PMPI_Allgather(in, count, MPI_FLOAT, ref, count, MPI_FLOAT, MPI_COMM_WORLD) == MPI_SUCCESS, "PMPI");
    float *d_in = dev_alloc(mine), *d_out = dev_alloc(bytes);
    if (in_place) {
        memcpy(host + (size_t)rank * count, in, mine);
        CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, host, count, MPI_FLOAT, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "host allgather");
        float *full = calloc(n, sizeof(float));
        memcpy(full + (size_t)rank * count, in, mine);
        to_dev(d_out, full, bytes);
        free(full);
        CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d_out, count, MPI_FLOAT, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "MPI_Allgather");
        staged(bytes, bytes);
    } else {
        CHECK(MPI_Allgather(in, count, MPI_FLOAT, host, count, MPI_FLOAT, MPI_COMM_WORLD) == MPI_SUCCESS,
              "host allgather");
        to_dev(d_in, in, mine);
        CHECK(MPI_Allgather(d_in, count, MPI_FLOAT, d_out, count, MPI_FLOAT, MPI_COMM_WORLD) == MPI_SUCCESS,
              "MPI_Allgather");
        staged(mine, bytes);
    }
    from_dev(got, d_out, bytes);
    char what[64];
    snprintf(what, sizeof what, "allgather count %d in_place %d", count, in_place);
    compare(what, got, host, ref, n, 0);
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(host), free(ref), free(got);
}

/* Unequal blocks (MPI_Reduce_scatter), and MPI_Iallgather waited for. */
static void check_reduce_scatter_v_and_iallgather(int count) {
    int *counts = malloc(size * sizeof(int));
    size_t n = 0;
    for (int i = 0; i < size; ++i) n += (size_t)(counts[i] = count + 1000 * i);
    const size_t bytes = n * sizeof(float), out = (size_t)counts[rank] * sizeof(float);
    float *in = malloc(bytes), *host = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    fill(in, n, 17);
    CHECK(PMPI_Reduce_scatter(in, ref, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "PMPI");
    CHECK(MPI_Reduce_scatter(in, host, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "host rs");
    float *d_in = dev_alloc(bytes), *d_out = dev_alloc(bytes);
    to_dev(d_in, in, bytes);
    CHECK(MPI_Reduce_scatter(d_in, d_out, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
          "MPI_Reduce_scatter");
    staged(bytes, out);
    from_dev(got, d_out, out);
    compare("reduce_scatter (unequal blocks)", got, host, ref, counts[rank], 0);

    const size_t all = (size_t)count * size * sizeof(float), mine = (size_t)count * sizeof(float);
    CHECK(PMPI_Allgather(in, count, MPI_FLOAT, ref, count, MPI_FLOAT, MPI_COMM_WORLD) == MPI_SUCCESS, "PMPI");
    CHECK(MPI_Allgather(in, count, MPI_FLOAT, host, count, MPI_FLOAT, MPI_COMM_WORLD) == MPI_SUCCESS, "host ag");
    MPI_Request req;
    CHECK(MPI_Iallgather(d_in, count, MPI_FLOAT, d_out, count, MPI_FLOAT, MPI_COMM_WORLD, &req) == MPI_SUCCESS,
          "MPI_Iallgather");
    CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
    staged(mine, all);
    from_dev(got, d_out, all);
    compare("iallgather", got, host, ref, (size_t)count * size, 0);
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(host), free(ref), free(got), free(counts);
}

/* Blocks with gaps between them: the gaps keep what the device buffer had. */
static void check_allgatherv(int count) {
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    size_t span = 0;
    for (int i = 0; i < size; ++i) {
        counts[i] = count + 17 * i;
        displs[i] = (int)span + 5;
        span = (size_t)displs[i] + counts[i];
    }
    const size_t bytes = span * sizeof(float), mine = (size_t)counts[rank] * sizeof(float);
    float *in = malloc(mine), *host = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    fill(in, counts[rank], 13);
    for (size_t i = 0; i < span; ++i) host[i] = ref[i] = -42.0f;
    CHECK(PMPI_Allgatherv(in, counts[rank], MPI_FLOAT, ref, counts, displs, MPI_FLOAT, MPI_COMM_WORLD) ==
              MPI_SUCCESS,
          "PMPI");
    CHECK(MPI_Allgatherv(in, counts[rank], MPI_FLOAT, host, counts, displs, MPI_FLOAT, MPI_COMM_WORLD) ==
              MPI_SUCCESS,
          "host allgatherv");
    float *d_in = dev_alloc(mine), *d_out = dev_alloc(span * sizeof(float));
    float *sentinel = malloc(bytes);
    for (size_t i = 0; i < span; ++i) sentinel[i] = -42.0f;
    to_dev(d_out, sentinel, bytes);
    to_dev(d_in, in, mine);
    CHECK(MPI_Allgatherv(d_in, counts[rank], MPI_FLOAT, d_out, counts, displs, MPI_FLOAT, MPI_COMM_WORLD) ==
              MPI_SUCCESS,
          "MPI_Allgatherv");
    /* The receive span starts at the first block: copied in (it has gaps) and back. */
    const size_t region = bytes - (size_t)displs[0] * sizeof(float);
    staged(mine + region, region);
    from_dev(got, d_out, bytes);
    compare("allgatherv with gaps", got, host, ref, span, 0);
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(host), free(ref), free(got), free(sentinel), free(counts), free(displs);
}

/* The staging overhead: the same MPI_Allreduce through terse on host and on
 * device buffers (and PMPI's own time on host buffers, for scale). */
static void time_host_and_device(int count) {
    const size_t bytes = (size_t)count * sizeof(float);
    /* About 256 MiB through each loop, 3 to 50 calls. */
    int iters = (int)(((size_t)256 << 20) / bytes);
    iters = iters < 3 ? 3 : iters > 50 ? 50 : iters;
    float *in = malloc(bytes), *out = malloc(bytes);
    CHECK(in && out, "malloc %zu", bytes);
    fill(in, count, 3);
    float *d_in = dev_alloc(bytes), *d_out = dev_alloc(bytes);
    to_dev(d_in, in, bytes);
    const double pmpi_us = time_allreduce(in, out, count, iters, 1);
    const double host_us = time_allreduce(in, out, count, iters, 0);
    const double device_us = time_allreduce(d_in, d_out, count, iters, 0);
    for (int i = 0; i < iters + 1; ++i) staged(bytes, bytes);
    if (rank == 0)
        printf("timing np=%d bytes=%zu iters=%d host_us=%.1f device_us=%.1f staging_overhead=%+.1f%% "
               "pmpi_host_us=%.1f\n",
               size, bytes, iters, host_us, device_us, (device_us / host_us - 1.0) * 100.0, pmpi_us);
    fflush(stdout);
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(out);
}

/* "mib=1,8,64": the sizes, each 1..256 MiB. */
int main(int argc, char **argv) {
    CHECK(argc >= 2, "usage: test_device_staging_mpi lossless|quantize8 [thread] [mib=N,N,...]");
    lossy = strcmp(argv[1], "quantize8") == 0;
    /* Checked once MPI is up, so that a bad argument aborts the whole job. */
    const int known_mode = lossy || strcmp(argv[1], "lossless") == 0;
    const char *mib_list = NULL, *unknown = NULL;
    int thread = 0, mib[8], nmib = 0;
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "thread") == 0) thread = 1;
        else if (strncmp(argv[i], "mib=", 4) == 0) mib_list = argv[i] + 4;
        else unknown = argv[i];
    }
    int provided = 0;
    if (thread) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided");
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(known_mode, "mode '%s': expected lossless or quantize8", argv[1]);
    CHECK(unknown == NULL, "argument '%s': expected thread or mib=N,N,...", unknown);
    if (mib_list) nmib = parse_mib(mib_list, mib, (int)(sizeof mib / sizeof mib[0]));
    load_driver(rank);

    /* The engine (at or above TERSE_MIN_BYTES, set by the script). */
    check_allreduce(100000, 0, MPI_SUM, !lossy, 0);
    check_allreduce(65537, 1, MPI_SUM, !lossy, 0);
    /* The MPI library: below min_bytes, and an operation the engine does not take. */
    check_allreduce(16, 0, MPI_SUM, 1, 0);
    check_allreduce(5000, 0, MPI_PROD, 1, 0);
    check_allreduce(5000, 1, MPI_PROD, 1, 0);
    check_reduce_scatter_block(30000, 0, 0);
    check_reduce_scatter_block(30001, 1, 0);
    check_allgather(30000, 0);
    check_allgather(30003, 1);
    check_allgatherv(20000);
    check_reduce_scatter_v_and_iallgather(20000);
    /* Non-blocking: MPI_Wait, an MPI_Test loop, and one the MPI library serves. */
    check_allreduce(100000, 0, MPI_SUM, !lossy, 1);
    check_allreduce(100001, 1, MPI_SUM, !lossy, 2);
    check_allreduce(5000, 0, MPI_PROD, 1, 1);
    check_allreduce(5000, 0, MPI_PROD, 1, 2);
    check_reduce_scatter_block(30000, 0, 1);

    /* Large calls: checked, then timed. */
    for (int i = 0; i < nmib; ++i) {
        const int count = (int)(((size_t)mib[i] << 20) / sizeof(float));
        check_allreduce(count, 0, MPI_SUM, !lossy, 0);
        time_host_and_device(count);
    }

    if (rank == 0) printf("staged calls %llu bytes %llu\n", staged_calls, staged_bytes);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
