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

#include <terse/types.h>
#include <terse/version.h>

#ifdef __cplusplus
extern "C" {
#endif

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
