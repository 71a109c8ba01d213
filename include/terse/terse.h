/*
 * terse public C API.
 *
 * Most programs never include this header: terse works by interception
 * (LD_PRELOAD=libterse.so, terse-run, or linking -lterse ahead of the MPI
 * library) and is tuned with TERSE_* environment variables, a config file or
 * MPI_Info hints; see terse(7).  This header is for programs that want to
 * configure a communicator from code or read its statistics.
 *
 * Every function returns a terse_status_t; on failure terse_last_error()
 * gives a message (thread-local, valid until the next terse call on the
 * same thread).  No function throws or aborts.
 */
#ifndef TERSE_TERSE_H
#define TERSE_TERSE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include <terse/version.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum terse_status {
    TERSE_OK = 0,
    TERSE_ERR_INVALID = -1, /* bad argument or configuration value  */
    TERSE_ERR_NO_MEMORY = -2,
    TERSE_ERR_UNSUPPORTED = -3,     /* datatype, op or memory kind refused  */
    TERSE_ERR_PLUGIN = -4,          /* codec plugin missing, broken, refused */
    TERSE_ERR_TRANSPORT = -5,       /* UCX failure (names the peer rank)   */
    TERSE_ERR_MISMATCH = -6,        /* ranks disagree on configuration      */
    TERSE_ERR_CORRUPT = -7,         /* a received frame failed its checks   */
    TERSE_ERR_MPI = -8,             /* an underlying MPI call failed        */
    TERSE_ERR_NOT_INITIALIZED = -9, /* MPI or terse not initialized         */
    TERSE_ERR_IO = -10,             /* file could not be read or written    */
    TERSE_ERR_REMOTE = -11          /* another rank failed this operation   */
} terse_status_t;

/* Human-readable name of a status code. */
const char *terse_status_string(terse_status_t status);

/* Message describing the last failure on the calling thread ("" if none). */
const char *terse_last_error(void);

/* Library version (runtime; compare with TERSE_VERSION_* from version.h). */
void terse_version(int *major, int *minor, int *patch);

/*
 * Configure a communicator from code; the highest-precedence source.
 * key is one of the MPI_Info keys without the "terse_" prefix:
 *   "codec" (e.g. "quantize:bits=8"), "enable", "min_bytes", "chunk_bytes",
 *   "pipeline_depth", "algorithm", "feedback", "verify".
 * Collective over comm: every rank must make the same calls.  Takes effect
 * at the next intercepted collective on comm, where the ranks check that
 * they agree.  Passing value == NULL removes a previous setting.
 */
terse_status_t terse_comm_configure(MPI_Comm comm, const char *key, const char *value);

/*
 * The priority of the calling thread's next non-blocking collective on comm
 * (MPI_Iallreduce, MPI_Ireduce_scatter_block, MPI_Ireduce_scatter,
 * MPI_Iallgather, MPI_Iallgatherv); later calls get the default, 0.  Under
 * nb_policy=priority a rank serves its operations in flight on comm highest
 * priority first (ties: the earliest issued), preempting the others at
 * chunk boundaries.  Training (PipeDAP): give the allgather whose result
 * layer i needs priority -i, so that they run in layer order; leave the
 * backward pass's reduce-scatters at 0, or give them their own ordering
 * below the allgathers (e.g. INT_MIN / 2 + i).  Local: ranks may differ,
 * and a call MPI serves ignores it.  See terse_set_next_priority(3).
 */
terse_status_t terse_set_next_priority(MPI_Comm comm, int priority);

/* Effective configuration of comm as a canonical string, e.g.
 * "enable=1 codec=none min_bytes=65536 ...".  Local. */
terse_status_t terse_comm_get_config(MPI_Comm comm, char *buf, size_t buflen);

/* The collective kinds terse runs, each counted apart in
 * terse_comm_stats_t's per_kind (the index) and in TERSE_STATS lines.  The
 * "I" kinds are the non-blocking calls. */
typedef enum {
    TERSE_KIND_ALLREDUCE = 0,
    TERSE_KIND_REDUCE_SCATTER_BLOCK,
    TERSE_KIND_REDUCE_SCATTER,
    TERSE_KIND_ALLGATHER,
    TERSE_KIND_ALLGATHERV,
    TERSE_KIND_IALLREDUCE,
    TERSE_KIND_IREDUCE_SCATTER_BLOCK,
    TERSE_KIND_IREDUCE_SCATTER,
    TERSE_KIND_IALLGATHER,
    TERSE_KIND_IALLGATHERV,
    TERSE_KIND_COUNT /* 10: fixed, per_kind's length is part of the ABI */
} terse_coll_kind_t;

/* What terse's engine ran of one kind on a communicator. */
typedef struct terse_kind_stats {
    uint64_t calls;      /* calls run by the engine (not those passed)    */
    uint64_t bytes_in;   /* user bytes of those calls, as bytes_in counts */
    uint64_t bytes_wire; /* bytes this rank sent for them                 */
} terse_kind_stats_t;

/* Statistics of one communicator.  Local; counts only this rank's view. */
typedef struct terse_comm_stats {
    uint64_t calls_intercepted; /* collectives run by terse's engine        */
    uint64_t calls_passed;      /* collectives at or above the pass-through
                                     floor passed to PMPI (terse(7))          */
    uint64_t bytes_in;          /* user bytes of intercepted calls          */
    uint64_t bytes_wire;        /* bytes this rank sent for them            */
    uint64_t bytes_wire_raw;    /* bytes the same schedule would send uncompressed */
    uint64_t chunks_raw;        /* chunks sent raw (incompressible, NaN/Inf) */
    double seconds_total;       /* wall time inside intercepted calls       */
    double seconds_encode;
    double seconds_decode; /* decode, reduce and combine               */
    double seconds_wait;   /* waiting on the network                   */
    double max_abs_error;  /* TERSE_VERIFY=1 only, else 0              */
    double max_rel_error;  /* TERSE_VERIFY=1 only, else 0              */
    /* Later additions: a caller built with the shorter struct passes its
       size and gets the fields before them. */
    uint64_t guard_checks;    /* calls the error guard checked (guard=)   */
    uint64_t guard_trips;     /* times it switched the communicator to
                                     lossless (0 or 1 per configuration)      */
    uint64_t guard_trip_call; /* the checked lossy allreduce (1-based) that
                                     switched it; 0 if none                   */
    /* calls_intercepted, bytes_in and bytes_wire split by kind, indexed by
       terse_coll_kind_t. */
    terse_kind_stats_t per_kind[TERSE_KIND_COUNT];
} terse_comm_stats_t;

/* Fill *stats (size = sizeof(terse_comm_stats_t), for ABI growth). */
terse_status_t terse_comm_stats(MPI_Comm comm, terse_comm_stats_t *stats, size_t size);

/* Zero the statistics of comm. */
terse_status_t terse_comm_stats_reset(MPI_Comm comm);

/*
 * Error feedback that training can keep (terse_feedback(3)).  With
 * feedback_key=sequence a residual belongs to the call's place among the
 * calls of its kind, datatype and count since the last
 * terse_feedback_step(comm): call it once per training iteration, on every
 * rank.  With feedback_key=tag it belongs to the tag set for the call just
 * before it.  Both are local.
 */
terse_status_t terse_feedback_step(MPI_Comm comm);
terse_status_t terse_set_next_feedback_tag(MPI_Comm comm, uint64_t tag);

/* Write / read back comm's residuals, each rank to / from "path.rankR".
 * Collective over comm; feedback_key=sequence or tag only.  A failure on
 * any rank is an error on every rank and changes nothing. */
terse_status_t terse_feedback_save(MPI_Comm comm, const char *path);
terse_status_t terse_feedback_restore(MPI_Comm comm, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* TERSE_TERSE_H */
