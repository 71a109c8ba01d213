/* Non-blocking collectives through terse: MPI_Iallreduce,
 * MPI_Ireduce_scatter_block, MPI_Ireduce_scatter, MPI_Iallgather and
 * MPI_Iallgatherv, in place and not, for float, double and int, against
 * PMPI's blocking results on the same inputs (mode "exact": a lossless
 * codec; "lossy": quantize:bits=8, feedback off, within its contract).
 * Their requests complete in every completion call, mixed in one array
 * with the MPI library's own requests; many are outstanding at once and
 * complete in a different order on every rank; blocking calls interleave
 * on the same communicator; an active request is freed; statistics count
 * every kind.  Mode "finalize": MPI_Finalize with operations in flight
 * completes them.  Mode "fail": a failure on one rank (the engine's test
 * hook) reaches every rank as an error of the completion call, and the
 * next call works. */
#include "mpi_check.h"

#include <terse/terse.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

extern int terse_engine_test_fail_next(const char *where);

static int rank, size, lossy;

enum { F32, F64, I32, NTYPES };
enum { AR, RSB, RS, AG, AGV, NKINDS };
static const char *kname[] = {"iallreduce", "ireduce_scatter_block", "ireduce_scatter", "iallgather",
                              "iallgatherv"};
static const int kstat[] = {TERSE_KIND_IALLREDUCE, TERSE_KIND_IREDUCE_SCATTER_BLOCK, TERSE_KIND_IREDUCE_SCATTER,
                            TERSE_KIND_IALLGATHER, TERSE_KIND_IALLGATHERV};
static MPI_Datatype mpi_of(int t) { return t == F32 ? MPI_FLOAT : t == F64 ? MPI_DOUBLE : MPI_INT; }
static size_t esize(int t) { return t == F64 ? 8 : 4; }

static void put(int t, void *b, size_t i, double v) {
    if (t == F32) ((float *)b)[i] = (float)v;
    else if (t == F64) ((double *)b)[i] = v;
    else ((int *)b)[i] = (int)v;
}
static double get(int t, const void *b, size_t i) {
    return t == F32 ? ((const float *)b)[i] : t == F64 ? ((const double *)b)[i] : ((const int *)b)[i];
}

/* One call: its buffers, PMPI's result, its request. */
typedef struct {
    int kind, t, in_place, base, seed;
    int counts[64], displs[64];
    size_t in_n, out_n; /* elements of the input and of the result buffer */
    char *in, *out, *ref;
    double maxabs;
    MPI_Request req;
} Op;

static double value(const Op *o, size_t i) {
    if (o->t == I32) return (double)((long)((i + o->seed) * 2654435761u % 10007) - 5003) * (rank + 1);
    return sin((double)(i + o->seed) * 0.017 + rank) * (1.0 + 0.25 * rank);
}

/* Builds the call and PMPI's result (a blocking PMPI collective: every
 * rank makes the same ones in the same order). */
static void op_make(Op *o, int kind, int t, int in_place, int base, int seed) {
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->t = t;
    o->in_place = in_place;
    o->base = base;
    o->seed = seed;
    int total = 0;
    for (int i = 0; i < size; ++i) {
        o->counts[i] = (kind == RS || kind == AGV) ? ((i % 3 == 1) ? 0 : base * (i + 1) / 2 + (base ? i : 0))
                                                   : base;
        total += o->counts[i];
    }
    for (int i = size - 1, pos = 0; i >= 0; --i) { /* Allgatherv: reversed, with gaps */
        o->displs[i] = pos;
        pos += o->counts[i] + 2;
    }
    const size_t es = esize(t);
    MPI_Datatype dt = mpi_of(t);
    switch (kind) {
    case AR: o->in_n = o->out_n = (size_t)base; break;
    case RSB:
        o->in_n = (size_t)base * size;
        o->out_n = in_place ? o->in_n : (size_t)base;
        break;
    case RS:
        o->in_n = (size_t)total;
        o->out_n = in_place ? o->in_n : (size_t)o->counts[rank];
        break;
    case AG:
        o->in_n = (size_t)base;
        o->out_n = (size_t)base * size;
        break;
    case AGV:
        o->in_n = (size_t)o->counts[rank];
        o->out_n = (size_t)(o->displs[0] + o->counts[0]);
        break;
    }
    o->in = malloc(o->in_n * es + 8);
    o->out = calloc(o->out_n + 1, es);
    o->ref = calloc(o->out_n + 1, es);
    for (size_t i = 0; i < o->in_n; ++i) put(t, o->in, i, value(o, i));
    for (int r = 0; r < size; ++r) o->maxabs = fmax(o->maxabs, 1.0 + 0.25 * r);
    if (t == I32) o->maxabs = 5003.0 * size;
    switch (kind) {
    case AR: PMPI_Allreduce(o->in, o->ref, base, dt, MPI_SUM, MPI_COMM_WORLD); break;
    case RSB: PMPI_Reduce_scatter_block(o->in, o->ref, base, dt, MPI_SUM, MPI_COMM_WORLD); break;
    case RS: PMPI_Reduce_scatter(o->in, o->ref, o->counts, dt, MPI_SUM, MPI_COMM_WORLD); break;
    case AG: PMPI_Allgather(o->in, base, dt, o->ref, base, dt, MPI_COMM_WORLD); break;
    case AGV:
        PMPI_Allgatherv(o->in, o->counts[rank], dt, o->ref, o->counts, o->displs, dt, MPI_COMM_WORLD);
        break;
    }
    if (in_place) {
        if (kind == AG) memcpy(o->out + (size_t)rank * base * es, o->in, o->in_n * es);
        else if (kind == AGV) memcpy(o->out + (size_t)o->displs[rank] * es, o->in, o->in_n * es);
        else memcpy(o->out, o->in, o->in_n * es);
    }
}

static void op_start(Op *o) {
    MPI_Datatype dt = mpi_of(o->t);
    const void *sb = o->in_place ? MPI_IN_PLACE : o->in;
    int rc = MPI_ERR_OTHER;
    switch (o->kind) {
    case AR: rc = MPI_Iallreduce(sb, o->out, o->base, dt, MPI_SUM, MPI_COMM_WORLD, &o->req); break;
    case RSB: rc = MPI_Ireduce_scatter_block(sb, o->out, o->base, dt, MPI_SUM, MPI_COMM_WORLD, &o->req); break;
    case RS: rc = MPI_Ireduce_scatter(sb, o->out, o->counts, dt, MPI_SUM, MPI_COMM_WORLD, &o->req); break;
    case AG:
        rc = o->in_place ? MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, o->out, o->base, dt, MPI_COMM_WORLD,
                                          &o->req)
                         : MPI_Iallgather(o->in, o->base, dt, o->out, o->base, dt, MPI_COMM_WORLD, &o->req);
        break;
    case AGV:
        rc = o->in_place ? MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, o->out, o->counts, o->displs, dt,
                                           MPI_COMM_WORLD, &o->req)
                         : MPI_Iallgatherv(o->in, o->counts[rank], dt, o->out, o->counts, o->displs, dt,
                                           MPI_COMM_WORLD, &o->req);
        break;
    }
    CHECK(rc == MPI_SUCCESS && o->req != MPI_REQUEST_NULL, "%s returned %d", kname[o->kind], rc);
}

static void op_check(Op *o) {
    const int reduces = o->kind == AR || o->kind == RSB || o->kind == RS;
    const size_t n = o->kind == RSB ? (size_t)o->base : o->kind == RS ? (size_t)o->counts[rank] : o->out_n;
    const int terms = reduces ? size : 1;
    for (size_t i = 0; i < n; ++i) {
        const double got = get(o->t, o->out, i), want = get(o->t, o->ref, i);
        double tol = 0;
        if (o->t != I32) {
            const double ulp = o->maxabs * terms * (o->t == F32 ? 1.2e-7 : 2.3e-16);
            tol = lossy ? terms * o->maxabs / 254.0 * (1 + 1e-6) + 4 * ulp : (reduces ? 4 * ulp : 0);
        }
        CHECK(fabs(got - want) <= tol, "%s type %d base %d in_place %d elem %zu: %.9g != %.9g", kname[o->kind],
              o->t, o->base, o->in_place, i, got, want);
    }
    free(o->in);
    free(o->out);
    free(o->ref);
}

/* The MPI library's own requests to mix in: a ring exchange and an
 * ineligible non-blocking collective (MPI_PROD). */
typedef struct {
    int sendv, recvv, prod_in, prod_out;
} Plain;
static void plain_start(Plain *p, MPI_Request *reqs) {
    p->sendv = rank * 10 + 1;
    p->recvv = -1;
    p->prod_in = 2;
    MPI_Irecv(&p->recvv, 1, MPI_INT, (rank + size - 1) % size, 7, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&p->sendv, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD, &reqs[1]);
    MPI_Iallreduce(&p->prod_in, &p->prod_out, 1, MPI_INT, MPI_PROD, MPI_COMM_WORLD, &reqs[2]);
}
static void plain_check(const Plain *p) {
    CHECK(p->recvv == ((rank + size - 1) % size) * 10 + 1, "ring exchange got %d", p->recvv);
    CHECK(p->prod_out == 1 << size, "MPI_PROD allreduce got %d", p->prod_out);
}

static int all_null(MPI_Request *r, int n) {
    for (int i = 0; i < n; ++i)
        if (r[i] != MPI_REQUEST_NULL) return 0;
    return 1;
}

/* Completes reqs[0..n) with completion call `how`. */
static void complete(int how, MPI_Request *reqs, int n) {
    int flag = 0, idx = 0, outc = 0, indices[64];
    MPI_Status st[64];
    switch (how) {
    case 0:
        for (int i = n - 1; i >= 0; --i) CHECK(MPI_Wait(&reqs[i], &st[0]) == MPI_SUCCESS, "MPI_Wait");
        break;
    case 1:
        while (!all_null(reqs, n))
            for (int i = 0; i < n; ++i)
                CHECK(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test");
        break;
    case 2: CHECK(MPI_Waitall(n, reqs, st) == MPI_SUCCESS, "MPI_Waitall"); break;
    case 3:
        do CHECK(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Testall");
        while (!flag);
        break;
    case 4:
        for (;;) {
            CHECK(MPI_Waitany(n, reqs, &idx, &st[0]) == MPI_SUCCESS, "MPI_Waitany");
            if (idx == MPI_UNDEFINED) break;
        }
        break;
    case 5:
        for (;;) {
            CHECK(MPI_Testany(n, reqs, &idx, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Testany");
            if (flag && idx == MPI_UNDEFINED) break;
        }
        break;
    case 6:
        for (;;) {
            CHECK(MPI_Waitsome(n, reqs, &outc, indices, st) == MPI_SUCCESS, "MPI_Waitsome");
            if (outc == MPI_UNDEFINED) break;
        }
        break;
    case 7:
        for (;;) {
            CHECK(MPI_Testsome(n, reqs, &outc, indices, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Testsome");
            if (outc == MPI_UNDEFINED) break;
        }
        break;
    case 8:
        /* Watched without being completed, then freed by MPI_Wait. */
        for (int i = 0; i < n; ++i) {
            do
                CHECK(MPI_Request_get_status(reqs[i], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS,
                      "MPI_Request_get_status");
            while (!flag);
            CHECK(reqs[i] != MPI_REQUEST_NULL, "MPI_Request_get_status freed a request");
        }
        for (int i = 0; i < n; ++i) CHECK(MPI_Wait(&reqs[i], &st[0]) == MPI_SUCCESS, "MPI_Wait");
        break;
    }
    CHECK(all_null(reqs, n), "completion call %d left requests active", how);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "at most 64 ranks");
    const char *mode = argc > 1 ? argv[1] : "exact";
    lossy = strcmp(mode, "lossy") == 0;

    if (strcmp(mode, "finalize") == 0) {
        /* Operations in flight at MPI_Finalize complete first. */
        Op ops[4];
        for (int i = 0; i < 4; ++i) {
            op_make(&ops[i], i % 2 ? AGV : AR, F64, 0, 30000 + i, i);
            op_start(&ops[i]);
        }
        MPI_Finalize();
        for (int i = 0; i < 4; ++i) op_check(&ops[i]);
        return 0;
    }

    if (strcmp(mode, "fail") == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        const char *where[] = {"start", "rs:middle", "ag:last"};
        for (int w = 0; w < 3; ++w) {
            Op o, next;
            op_make(&o, w == 2 ? AGV : AR, F32, 0, 40000, w);
            op_make(&next, AR, F32, 0, 40000, 10 + w);
            if (rank == size - 1) CHECK(terse_engine_test_fail_next(where[w]) == 0, "arming %s", where[w]);
            op_start(&o);
            MPI_Request reqs[2];
            reqs[0] = o.req;
            op_start(&next);
            reqs[1] = next.req;
            MPI_Status st[2];
            int rc = MPI_Waitall(2, reqs, st);
            CHECK(size == 1 ? 1 : rc == MPI_ERR_IN_STATUS, "failure at %s: MPI_Waitall returned %d", where[w],
                  rc);
            CHECK(size == 1 || (st[0].MPI_ERROR != MPI_SUCCESS && st[1].MPI_ERROR == MPI_SUCCESS),
                  "failure at %s: statuses %d %d", where[w], st[0].MPI_ERROR, st[1].MPI_ERROR);
            CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "requests left active");
            free(o.in);
            free(o.out);
            free(o.ref);
            op_check(&next);
        }
        MPI_Finalize();
        return 0;
    }

    terse_comm_stats_reset(MPI_COMM_WORLD);
    unsigned long long want[NKINDS] = {0};
    const int bases[] = {0, 3, 1000, 50001};
    const int types = lossy ? 2 : NTYPES; /* a lossy codec takes floating-point data only */

    /* Every kind, type, in-place form and size; each batch mixed with the
     * MPI library's requests and completed by one of the nine ways. */
    int how = 0;
    for (int kind = 0; kind < NKINDS; ++kind)
        for (int t = 0; t < types; ++t)
            for (unsigned b = 0; b < sizeof bases / sizeof bases[0]; ++b) {
                Op ops[2];
                MPI_Request reqs[5];
                Plain plain;
                for (int ip = 0; ip < 2; ++ip) op_make(&ops[ip], kind, t, ip, bases[b], (int)b);
                plain_start(&plain, reqs); /* reqs[0..2] */
                for (int ip = 0; ip < 2; ++ip) {
                    op_start(&ops[ip]);
                    reqs[3 + ip] = ops[ip].req;
                }
                complete(how, reqs, 5);
                how = (how + 1) % 9;
                plain_check(&plain);
                for (int ip = 0; ip < 2; ++ip) op_check(&ops[ip]);
                want[kind] += 2;
            }

    /* Many outstanding, completed in an order of each rank's own, with
     * blocking calls on the same communicator in between. */
    enum { MANY = 24 };
    Op many[MANY];
    for (int i = 0; i < MANY; ++i) {
        op_make(&many[i], i % NKINDS, i % 2 ? F64 : F32, i % 3 == 0, 4000 + 37 * i, 100 + i);
        op_start(&many[i]);
        want[i % NKINDS]++;
        if (i % 8 == 7) {
            /* A blocking terse call between non-blocking ones. */
            double x[5000], y[5000];
            for (int j = 0; j < 5000; ++j) x[j] = j + rank;
            CHECK(MPI_Allreduce(x, y, 5000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce");
            for (int j = 0; j < 5000; ++j)
                CHECK(fabs(y[j] - (size * (double)j + size * (size - 1) / 2.0)) <=
                          (lossy ? size * (5000.0 + size) / 254.0 * 1.01 : 1e-9 * size * (j + size)),
                      "blocking allreduce between non-blocking ones: %g", y[j]);
        }
    }
    for (int k = 0; k < MANY; ++k) {
        int i = (k * 7 + rank * 5) % MANY; /* 7 is prime to MANY: a permutation */
        CHECK(MPI_Wait(&many[i].req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait");
        op_check(&many[i]);
    }

    /* An active request freed: it still completes, in the background; a
     * blocking collective on the communicator runs after it. */
    Op freed;
    op_make(&freed, AR, F64, 0, 20000, 7);
    op_start(&freed);
    want[AR]++;
    CHECK(MPI_Request_free(&freed.req) == MPI_SUCCESS && freed.req == MPI_REQUEST_NULL, "MPI_Request_free");
    {
        double x[2000], y[2000];
        for (int j = 0; j < 2000; ++j) x[j] = 1;
        CHECK(MPI_Allreduce(x, y, 2000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce");
    }
    op_check(&freed);

    /* Per kind: every non-blocking call counted where it belongs. */
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(MPI_COMM_WORLD, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
    for (int k = 0; k < NKINDS; ++k)
        CHECK(st.per_kind[kstat[k]].calls == want[k], "%s: %llu calls counted, %llu made", kname[k],
              (unsigned long long)st.per_kind[kstat[k]].calls, want[k]);
    CHECK(st.per_kind[TERSE_KIND_ALLREDUCE].calls == 4, "blocking allreduce: %llu",
          (unsigned long long)st.per_kind[TERSE_KIND_ALLREDUCE].calls);
    uint64_t wire = st.per_kind[TERSE_KIND_IALLREDUCE].bytes_wire, all = 0;
    PMPI_Allreduce(&wire, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(size == 1 || all > 0, "no iallreduce wire bytes counted");

    /* Nothing in flight: terse's progress thread must keep no core busy
     * (this process uses next to no CPU while the application sleeps). */
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    struct timespec pause = {0, 400 * 1000 * 1000};
    nanosleep(&pause, NULL);
    getrusage(RUSAGE_SELF, &r1);
    const double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                       (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6 +
                       (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                       (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
    CHECK(cpu < 0.04, "%.3f s of CPU in 0.4 s with nothing in flight: something spins", cpu);
    MPI_Finalize();
    return 0;
}
