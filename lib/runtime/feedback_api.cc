// The error-feedback part of the public C API (include/terse/terse.h,
// terse_feedback(3)): stable keys (terse_feedback_step,
// terse_set_next_feedback_tag) and checkpoints of the residuals
// (terse_feedback_save, terse_feedback_restore).
//
// Save and restore are collective: each rank does its local part (encode
// and write a temporary file; read and check its file into a fresh store),
// then one agreement tells every rank whether all succeeded and, if not,
// the status and message of the lowest rank that failed.  Only then does a
// save rename its files into place and a restore replace the residuals, so
// a failure anywhere changes nothing on any rank.
#include "config/config.h"
#include "engine/error_feedback.h"
#include "runtime/comm_state.h"
#include "runtime/feedback_file.h"
#include "runtime/nonblocking.h"

#include <terse/terse.h>

#include <memory>
#include <new>
#include <string>

using namespace terse;

namespace {

// Beyond the residuals a file holds its header and the ordinals of sequence
// keys (a few per shape of call in an iteration): a file that is larger than
// the store's budget and this is not one of ours.
constexpr size_t kFileOverhead = size_t(64) << 20;

// Every rank's outcome, after each did its local part (local, with its
// message in last_error()).  The failing ranks return their own error; the
// others TERSE_ERR_REMOTE naming the lowest failing rank and its message.
Status agree(CommState *st, const char *fn, Status local) {
    std::string mine = local == TERSE_OK ? std::string() : std::string(last_error());
    int me = local == TERSE_OK ? st->size : st->rank, first = st->size;
    if (PMPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, st->comm) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "%s: PMPI_Allreduce on communicator %s failed", fn,
                         st->describe().c_str());
    if (first == st->size) return TERSE_OK;
    int len = static_cast<int>(mine.size());
    PMPI_Bcast(&len, 1, MPI_INT, first, st->comm);
    std::string theirs(static_cast<size_t>(len), '\0');
    if (st->rank == first) theirs = mine;
    PMPI_Bcast(theirs.data(), len, MPI_CHAR, first, st->comm);
    if (local != TERSE_OK) return set_error(local, "%s: %s", fn, mine.c_str());
    return set_error(TERSE_ERR_REMOTE, "%s: rank %d of communicator %s failed: %s", fn, first,
                     st->describe().c_str(), theirs.c_str());
}

// The state of comm ready for a save or restore: agreed (a collective
// agreement, as at comm's first collective, if it has had none), with no
// non-blocking operation using its residuals.
CommState *ready_state(MPI_Comm comm, const char *fn, const char *path, Status *s) {
    clear_error();
    CommState *st = comm_state_get(comm, s);
    if (!st) {
        *s = set_error(*s, "%s: %s", fn, last_error());
        return nullptr;
    }
    // Local refusals that every rank of comm makes alike.
    if (st->is_inter) {
        *s = set_error(TERSE_ERR_UNSUPPORTED,
                       "%s: communicator %s is an intercommunicator, which has no error feedback", fn,
                       st->describe().c_str());
        return nullptr;
    }
    if (!st->ready && (*s = comm_state_ready(st)) != TERSE_OK) {
        *s = set_error(*s, "%s: %s", fn, last_error());
        return nullptr;
    }
    if (st->nb) nb_drain(st);
    // Collective from here on (a NULL path on one rank must not leave the
    // others waiting): the caller agrees on this status.
    *s = TERSE_OK;
    if (!path || !*path) *s = set_error(TERSE_ERR_INVALID, "the path is NULL or empty");
    else if (st->config.feedback_key == FeedbackKeyMode::Address)
        *s = set_error(TERSE_ERR_INVALID,
                       "communicator %s keys its residuals by buffer address (feedback_key=address), which "
                       "means nothing in another process; set feedback_key=sequence or feedback_key=tag",
                       st->describe().c_str());
    return st;
}

FeedbackFileOrigin origin_of(const CommState *st) {
    FeedbackFileOrigin o;
    o.rank = st->rank;
    o.size = st->size;
    o.mode = st->config.feedback_key;
    o.codec = st->config.codec.text();
    return o;
}

}  // namespace

extern "C" terse_status_t terse_feedback_step(MPI_Comm comm) {
    clear_error();
    Status s;
    CommState *st = comm_state_get(comm, &s);
    if (!st) return s;
    st->feedback_keys.step();
    return TERSE_OK;
}

extern "C" terse_status_t terse_set_next_feedback_tag(MPI_Comm comm, uint64_t tag) {
    clear_error();
    Status s;
    CommState *st = comm_state_get(comm, &s);
    if (!st) return s;
    st->feedback_keys.set_next_tag(tag);
    return TERSE_OK;
}

extern "C" terse_status_t terse_feedback_save(MPI_Comm comm, const char *path) {
    static const char *fn = "terse_feedback_save";
    try {
        Status s;
        CommState *st = ready_state(comm, fn, path, &s);
        if (!st) return s;
        std::string file, bytes;
        if (s == TERSE_OK) {
            file = feedback_file_name(path, st->rank);
            s = feedback_file_encode(origin_of(st), st->residuals.get(), st->feedback_keys.ordinals(), &bytes);
        }
        if (s == TERSE_OK) s = feedback_file_write(file, bytes);
        const Status all = agree(st, fn, s);
        if (all != TERSE_OK) {
            if (!file.empty()) feedback_file_discard(file);
            return all;
        }
        // A rank whose rename fails leaves the set incomplete: every rank
        // then removes its file, so no mixed checkpoint is left behind.
        const Status renamed = agree(st, fn, feedback_file_commit(file));
        if (renamed != TERSE_OK) std::remove(file.c_str());
        return renamed;
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "%s: out of memory", fn);
    }
}

extern "C" terse_status_t terse_feedback_restore(MPI_Comm comm, const char *path) {
    static const char *fn = "terse_feedback_restore";
    try {
        Status s;
        CommState *st = ready_state(comm, fn, path, &s);
        if (!st) return s;
        std::unique_ptr<FeedbackStore> fresh;
        FeedbackKeyer::Ordinals ordinals;
        if (s == TERSE_OK && st->residuals) {
            fresh.reset(new (std::nothrow)
                            FeedbackStore(st->residuals->max_entries(), st->residuals->max_bytes()));
            if (!fresh) s = set_error(TERSE_ERR_NO_MEMORY, "out of memory for the residuals");
        }
        if (s == TERSE_OK) {
            const std::string file = feedback_file_name(path, st->rank);
            std::string bytes;
            const size_t limit = (st->residuals ? st->residuals->max_bytes() : 0) + kFileOverhead;
            s = feedback_file_read(file, limit, &bytes);
            if (s == TERSE_OK) s = feedback_file_decode(bytes, file, origin_of(st), fresh.get(), &ordinals);
        }
        s = agree(st, fn, s);
        if (s != TERSE_OK) return s;
        if (fresh) st->residuals = std::move(fresh);
        st->feedback_keys.set_ordinals(std::move(ordinals));
        return TERSE_OK;
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "%s: out of memory", fn);
    }
}
