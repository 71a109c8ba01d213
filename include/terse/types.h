/*
 * The types of terse's public C API that do not need MPI: status codes,
 * error messages and the statistics structures.  <terse/terse.h> includes
 * it; terse's own layers below the runtime (lib/util, lib/engine, ...)
 * include only this, so that nothing below the runtime parses <mpi.h>.
 */
#ifndef TERSE_TYPES_H
#define TERSE_TYPES_H

#include <stdint.h>

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

#ifdef __cplusplus
}
#endif

#endif /* TERSE_TYPES_H */
