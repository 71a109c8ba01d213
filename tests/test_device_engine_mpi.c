/* MPI_Allreduce on CUDA device buffers through the engine's device codec
 * path (runtime/device_codecs.h): the codec's device instance encodes and
 * decodes on the device buffers, only payloads cross to the host.  One
 * source for two drivers, as test_device_staging_mpi.c: the fake driver of
 * tests/fake_cuda under make check (test_device_engine.sh, with the devsim
 * test codec; "device memory" there is PROT_NONE to every host code but the
 * driver's copies), or a real one (tests/gpu/device-mpi-check.sh, with
 * quantize:bits=8 and its CUDA kernels).
 *
 * Every call is made on the same inputs on host buffers through terse (the
 * host path: host codec) and on device buffers: the results must be equal
 * bit for bit; against PMPI on host buffers they must be within the 8-bit
 * codes' bound.  Sizes include odd counts and chunks holding a non-finite
 * value (sent raw); float32 and float64; in place and not.  The decoupled
 * halves (reduce-scatter block and v, allgather and v) on device buffers
 * must equal the host path's too, and so must non-blocking calls.  A
 * non-blocking call issued while another one holds the communicator's
 * device lane, an allreduce from host to device memory and, on rank 1, an
 * in-place reduce-scatter whose block overlaps its buffer's start are
 * calls the path does not serve (staged whole, with the host path's
 * results).
 *
 * Usage: test_device_engine_mpi [mib=N,N,...]
 * mib=: also an MPI_Allreduce of each size in MiB, checked, then timed on
 * host and device buffers ("timing" lines, as test_device_staging_mpi).
 * Rank 0 prints "device calls N bytes B": the blocking calls it made on
 * device buffers that the path serves and what staging them whole would
 * have copied (in and out), and "not ready N": the fake driver's cuEventQuery answers
 * CUDA_ERROR_NOT_READY (the engine's waits for copies in flight), or -1
 * under a real driver. */
#include "device_mpi_driver.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;
static unsigned long long device_calls, device_bytes;
/* The fake driver's count of its "not ready" answers (absent from a real one). */
static unsigned long long (*not_ready)(void);

/* Values in [-1, 1), different per rank; nonfinite > 0: that element on
 * rank 0 is +Inf (its chunk goes raw). */
static double value(size_t i, int salt) {
    unsigned h = (unsigned)(i * 2654435761u + (unsigned)(rank + 1) * 40503u + (unsigned)salt * 977u);
    return (h % 20001) / 10000.0 - 1.0;
}

/* An allreduce of count elements of dt (MPI_FLOAT or MPI_DOUBLE) on device
 * buffers, against the host path and PMPI. */
static void check(int count, MPI_Datatype dt, int in_place, long nonfinite, int nb) {
    const size_t es = dt == MPI_DOUBLE ? 8 : 4, bytes = (size_t)count * es;
    char *in = malloc(bytes), *host = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    CHECK(in && host && ref && got, "malloc %zu", bytes);
    for (int i = 0; i < count; ++i) {
        double v = value((size_t)i, count);
        if (dt == MPI_DOUBLE) ((double *)in)[i] = v;
        else ((float *)in)[i] = (float)v;
    }
    if (nonfinite >= 0 && nonfinite < count && rank == 0) {
        if (dt == MPI_DOUBLE) ((double *)in)[nonfinite] = INFINITY;
        else ((float *)in)[nonfinite] = INFINITY;
    }
    CHECK(PMPI_Allreduce(in, ref, count, dt, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "PMPI_Allreduce");
    CHECK(MPI_Allreduce(in, host, count, dt, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "host MPI_Allreduce");
    void *d_in = dev_alloc(bytes), *d_out = dev_alloc(bytes);
    to_dev(in_place ? d_out : d_in, in, bytes);
    const void *send = in_place ? MPI_IN_PLACE : d_in;
    if (nb) {
        MPI_Request req;
        CHECK(MPI_Iallreduce(send, d_out, count, dt, MPI_SUM, MPI_COMM_WORLD, &req) == MPI_SUCCESS, "Iallreduce");
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
    } else {
        CHECK(MPI_Allreduce(send, d_out, count, dt, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
    }
    ++device_calls;
    device_bytes += 2 * bytes;
    from_dev(got, d_out, bytes);
    CHECK(memcmp(got, host, bytes) == 0,
          "allreduce count %d %s in_place %d nonfinite %ld nb %d: device result differs from the host path's",
          count, dt == MPI_DOUBLE ? "double" : "float", in_place, nonfinite, nb);
    /* 8-bit codes: each rank's rounding is at most half a step of its
     * chunk's max |x| (< 1) / 127; the sum of size of them, doubled. */
    const double bound = size / 127.0;
    for (int i = 0; i < count; ++i) {
        const double g = dt == MPI_DOUBLE ? ((double *)got)[i] : ((float *)got)[i];
        const double r = dt == MPI_DOUBLE ? ((double *)ref)[i] : ((float *)ref)[i];
        if (isinf(r)) CHECK(isinf(g) && g > 0, "element %d: %g where PMPI has %g", i, g, r);
        else CHECK(fabs(g - r) <= bound, "element %d of %d: %.9g vs PMPI %.9g (bound %g)", i, count, g, r, bound);
    }
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(host), free(ref), free(got);
}

/* A call the path does not serve, staged whole: a send buffer in host
 * memory with a receive buffer on the device (reason buffers); the result
 * still equals the host path's. */
static void check_unserved(int count) {
    const size_t bytes = (size_t)count * sizeof(float);
    float *in = malloc(bytes), *host = malloc(bytes), *got = malloc(bytes);
    CHECK(in && host && got, "malloc %zu", bytes);
    for (size_t i = 0; i < (size_t)count; ++i) in[i] = (float)value(i, 5);
    CHECK(MPI_Allreduce(in, host, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "host allreduce");
    float *d_out = dev_alloc(bytes);
    CHECK(MPI_Allreduce(in, d_out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "mixed allreduce");
    from_dev(got, d_out, bytes);
    CHECK(memcmp(got, host, bytes) == 0, "allreduce from host to device memory differs from the host path's");
    dev_free(d_out);
    free(in), free(host), free(got);
}

/* The decoupled halves, as the engine runs them (CollKind in
 * engine/coll_args.h). */
enum half { RSB, RSV, AG, AGV };
static const char *const half_name[] = {"reduce_scatter_block", "reduce_scatter", "allgather", "allgatherv"};

/* One call of kind h on float buffers (send may be MPI_IN_PLACE). */
static void call_half(enum half h, const void *send, void *recv, int count, const int *counts,
                      const int *displs) {
    int rc = MPI_ERR_OTHER;
    switch (h) {
    case RSB: rc = MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case RSV: rc = MPI_Reduce_scatter(send, recv, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case AG: rc = MPI_Allgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD); break;
    case AGV:
        rc = MPI_Allgatherv(send, counts[rank], MPI_FLOAT, recv, counts, displs, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    }
    CHECK(rc == MPI_SUCCESS, "%s", half_name[h]);
}

/* Reduce-scatter (block and v) and allgather (and v) on device buffers,
 * in place and not, against the same call on host buffers through terse:
 * the same bits, the receive buffer's bytes outside the result (the
 * allgatherv's gaps) included.  The v kinds' blocks are uneven (count +
 * 3b elements) and the allgatherv's apart (5b elements of gap), so that
 * on rank 1 an in-place reduce-scatter's block overlaps the start of its
 * buffer, where its result goes: that rank stages it whole (reason
 * buffers) while the others run on the device path. */
static void check_half(enum half h, int count, int in_place) {
    int counts[64], displs[64];
    CHECK(size <= 64, "at most 64 ranks");
    size_t total = 0, gathered = 0;
    for (int b = 0; b < size; ++b) {
        counts[b] = count + 3 * b;
        displs[b] = (int)gathered + 5 * b;
        total += (size_t)counts[b];
        gathered = (size_t)displs[b] + (size_t)counts[b];
    }
    const size_t es = sizeof(float);
    /* Elements of the send buffer and of the receive buffer, where this
     * rank's block starts in an in-place allgather's receive buffer, and
     * the result's elements. */
    size_t nsend = 0, nrecv = 0, own = 0, nres = 0;
    switch (h) {
    case RSB:
        nsend = (size_t)count * (size_t)size, nres = (size_t)count;
        nrecv = in_place ? nsend : nres;
        break;
    case RSV:
        nsend = total, nres = (size_t)counts[rank];
        nrecv = in_place ? total : nres;
        break;
    case AG:
        nsend = (size_t)count, nres = nrecv = (size_t)count * (size_t)size, own = (size_t)count * rank;
        break;
    case AGV: nsend = (size_t)counts[rank], nres = nrecv = gathered, own = (size_t)displs[rank]; break;
    }
    float *in = malloc(nsend * es), *host = malloc(nrecv * es), *got = malloc(nrecv * es);
    CHECK(in && host && got, "malloc");
    for (size_t i = 0; i < nsend; ++i) in[i] = (float)value(i, 11 + (int)h);
    /* The receive buffer before the call: what the result replaces and
     * the gaps a gather must leave alone; an in-place call's input. */
    for (size_t i = 0; i < nrecv; ++i) host[i] = (float)(1000 + i % 7);
    if (in_place) memcpy(host + own, in, nsend * es);
    float *d_in = dev_alloc(nsend * es), *d_out = dev_alloc(nrecv * es);
    to_dev(d_out, host, nrecv * es);
    to_dev(d_in, in, nsend * es);
    call_half(h, in_place ? MPI_IN_PLACE : (const void *)in, host, count, counts, displs);
    call_half(h, in_place ? MPI_IN_PLACE : (const void *)d_in, d_out, count, counts, displs);
    from_dev(got, d_out, nrecv * es);
    CHECK(memcmp(got, host, nres * es) == 0,
          "%s count %d in_place %d: device result differs from the host path's", half_name[h], count, in_place);
    if (!(h == RSV && in_place && rank == 1)) {
        ++device_calls;
        device_bytes += (in_place ? 2 * nrecv : nsend + nrecv) * es;
    }
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(host), free(got);
}

/* Two non-blocking calls on device buffers in flight at once: the first
 * (a reduce-scatter) holds the communicator's device lane until it ends,
 * so the second (an allreduce) is staged whole (reason nonblocking).  Rank
 * 1 issues its calls late, so that on rank 0 the first cannot end before
 * the second is issued; rank 0's statistics are the ones checked. */
static void check_nb_pair(int count) {
    const size_t bytes = (size_t)count * sizeof(float), all = bytes * (size_t)size;
    float *in = malloc(all), *host_rs = malloc(bytes), *host_ar = malloc(all), *got = malloc(all);
    CHECK(in && host_rs && host_ar && got, "malloc %zu", all);
    for (size_t i = 0; i < (size_t)count * size; ++i) in[i] = (float)value(i, 7);
    CHECK(MPI_Reduce_scatter_block(in, host_rs, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
          "host reduce_scatter_block");
    CHECK(MPI_Allreduce(in, host_ar, count * size, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
          "host allreduce");
    float *d_in = dev_alloc(all), *d_rs = dev_alloc(bytes), *d_ar = dev_alloc(all);
    to_dev(d_in, in, all);
    if (rank == 1) usleep(200000);
    MPI_Request req[2];
    CHECK(
        MPI_Ireduce_scatter_block(d_in, d_rs, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[0]) == MPI_SUCCESS,
        "Ireduce_scatter_block");
    CHECK(MPI_Iallreduce(d_in, d_ar, count * size, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[1]) == MPI_SUCCESS,
          "Iallreduce");
    CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
    ++device_calls;
    device_bytes += all + bytes;
    from_dev(got, d_rs, bytes);
    CHECK(memcmp(got, host_rs, bytes) == 0,
          "Ireduce_scatter_block on device buffers differs from the host path's");
    from_dev(got, d_ar, all);
    CHECK(memcmp(got, host_ar, all) == 0, "a staged Iallreduce on device buffers differs from the host path's");
    dev_free(d_in);
    dev_free(d_rs);
    dev_free(d_ar);
    free(in), free(host_rs), free(host_ar), free(got);
}

static void time_host_and_device(int count) {
    const size_t bytes = (size_t)count * sizeof(float);
    int iters = (int)(((size_t)256 << 20) / bytes);
    iters = iters < 3 ? 3 : iters > 50 ? 50 : iters;
    float *in = malloc(bytes), *out = malloc(bytes);
    CHECK(in && out, "malloc %zu", bytes);
    for (int i = 0; i < count; ++i) in[i] = (float)value((size_t)i, 3);
    void *d_in = dev_alloc(bytes), *d_out = dev_alloc(bytes);
    to_dev(d_in, in, bytes);
    const double host_us = time_allreduce(in, out, count, iters, 0);
    const double device_us = time_allreduce(d_in, d_out, count, iters, 0);
    device_calls += (unsigned long long)iters + 1;
    device_bytes += ((unsigned long long)iters + 1) * 2 * bytes;
    if (rank == 0)
        printf("timing np=%d bytes=%zu iters=%d host_us=%.1f device_codec_us=%.1f overhead=%+.1f%%\n", size,
               bytes, iters, host_us, device_us, (device_us / host_us - 1.0) * 100.0);
    fflush(stdout);
    dev_free(d_in);
    dev_free(d_out);
    free(in), free(out);
}

int main(int argc, char **argv) {
    const char *mib_list = NULL, *unknown = NULL;
    int mib[8], nmib = 0;
    for (int i = 1; i < argc; ++i) {
        if (strncmp(argv[i], "mib=", 4) == 0) mib_list = argv[i] + 4;
        else unknown = argv[i];
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Checked once MPI is up, so that a bad argument aborts the whole job. */
    CHECK(unknown == NULL, "argument '%s': expected mib=N,N,...", unknown);
    if (mib_list) nmib = parse_mib(mib_list, mib, (int)(sizeof mib / sizeof mib[0]));
    not_ready = (unsigned long long (*)(void))dlsym(load_driver(rank), "fake_cuda_not_ready_answers");

    check(100000, MPI_FLOAT, 0, -1, 0);
    check(65537, MPI_FLOAT, 1, -1, 0);
    check(262147, MPI_FLOAT, 0, 70000, 0);  /* a chunk sent raw */
    check(300001, MPI_FLOAT, 1, 299999, 0); /* the last chunk raw, in place */
    check(40961, MPI_DOUBLE, 0, -1, 0);
    check(1048579, MPI_FLOAT, 0, -1, 0); /* several chunks per block */
    /* Repeated: the lane and the device instance are reused. */
    check(100000, MPI_FLOAT, 0, -1, 0);
    /* Non-blocking, alone: served too. */
    check(100000, MPI_FLOAT, 0, -1, 1);
    check(65537, MPI_FLOAT, 1, 40000, 1);
    /* Not served: staged whole (the statistics name the reason). */
    check_nb_pair(50001);
    check_unserved(30001);
    for (int h = RSB; h <= AGV; ++h)
        for (int in_place = 0; in_place <= 1; ++in_place) check_half((enum half)h, 30001 + 4096 * h, in_place);
    for (int i = 0; i < nmib; ++i) {
        const int count = (int)(((size_t)mib[i] << 20) / sizeof(float));
        check(count, MPI_FLOAT, 0, -1, 0);
        time_host_and_device(count);
    }
    if (rank == 0) {
        printf("device calls %llu bytes %llu\n", device_calls, device_bytes);
        printf("not ready %lld\n", not_ready ? (long long)not_ready() : -1LL);
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
