// Fortran entry points.  Open MPI's mpif.h / "use mpi" bindings call
// PMPI_* directly, so a C-only MPI_Allreduce wrapper would never see
// Fortran calls; terse defines the Fortran symbols itself (all the name
// manglings compilers use) and converts the handles.  "use mpi_f08" goes
// through the same PMPI-calling code by other names (mpi_allreduce_f08_
// ...), defined here too: there every handle is a derived type holding
// the same integer, a status the same six integers, and ierror is
// OPTIONAL (a null pointer when the caller leaves it out).  Besides
// MPI_ALLREDUCE: the decoupled halves (reduce-scatter, allgather), the
// non-blocking collectives and the completion calls, which must see
// terse's requests (runtime/nonblocking.h) from Fortran too.
#include "dispatch.h"

#include <mpi.h>

#include <vector>

// Open MPI's Fortran MPI_IN_PLACE is the address of this common block;
// weak so that a build against another MPI still links.
extern "C" {
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
}

namespace {

bool is_fortran_in_place(const void *p) {
    return p && (p == &mpi_fortran_in_place_ || p == &mpi_fortran_in_place || p == &mpi_fortran_in_place__ ||
                 p == &MPI_FORTRAN_IN_PLACE);
}

void f_allreduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op, MPI_Fint *comm,
                 MPI_Fint *ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype dt = PMPI_Type_f2c(*datatype);
    MPI_Op o = PMPI_Op_f2c(*op);
    const void *sb = is_fortran_in_place(sendbuf) ? MPI_IN_PLACE : sendbuf;
    *ierr = terse::dispatch_allreduce(sb, recvbuf, *count, dt, o, c);
}

// ---- the non-blocking collectives: handles converted, then the C wrappers

const void *f_sendbuf(void *p) { return is_fortran_in_place(p) ? MPI_IN_PLACE : p; }

// Fortran integer arrays as C int arrays (the same where MPI_Fint is int).
std::vector<int> f_ints(const MPI_Fint *a, MPI_Comm comm) {
    int n = 0;
    if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS || n < 0) n = 0;
    return std::vector<int>(a, a + n);
}

// ---- the blocking decoupled calls: handles converted, then the C wrappers

void f_reduce_scatter_block(void *s, void *r, MPI_Fint *n, MPI_Fint *d, MPI_Fint *o, MPI_Fint *c,
                            MPI_Fint *ierr) {
    *ierr = MPI_Reduce_scatter_block(f_sendbuf(s), r, *n, PMPI_Type_f2c(*d), PMPI_Op_f2c(*o), PMPI_Comm_f2c(*c));
}

void f_reduce_scatter(void *s, void *r, MPI_Fint *counts, MPI_Fint *d, MPI_Fint *o, MPI_Fint *c, MPI_Fint *ierr) {
    MPI_Comm comm = PMPI_Comm_f2c(*c);
    const std::vector<int> rc = f_ints(counts, comm);
    *ierr = MPI_Reduce_scatter(f_sendbuf(s), r, rc.data(), PMPI_Type_f2c(*d), PMPI_Op_f2c(*o), comm);
}

void f_allgather(void *s, MPI_Fint *sn, MPI_Fint *sd, void *r, MPI_Fint *rn, MPI_Fint *rd, MPI_Fint *c,
                 MPI_Fint *ierr) {
    *ierr = MPI_Allgather(f_sendbuf(s), *sn, PMPI_Type_f2c(*sd), r, *rn, PMPI_Type_f2c(*rd), PMPI_Comm_f2c(*c));
}

void f_allgatherv(void *s, MPI_Fint *sn, MPI_Fint *sd, void *r, MPI_Fint *counts, MPI_Fint *displs, MPI_Fint *rd,
                  MPI_Fint *c, MPI_Fint *ierr) {
    MPI_Comm comm = PMPI_Comm_f2c(*c);
    const std::vector<int> rc = f_ints(counts, comm), rdis = f_ints(displs, comm);
    *ierr = MPI_Allgatherv(f_sendbuf(s), *sn, PMPI_Type_f2c(*sd), r, rc.data(), rdis.data(), PMPI_Type_f2c(*rd),
                           comm);
}

void f_iallreduce(void *s, void *r, MPI_Fint *n, MPI_Fint *d, MPI_Fint *o, MPI_Fint *c, MPI_Fint *req,
                  MPI_Fint *ierr) {
    MPI_Request q = MPI_REQUEST_NULL;
    *ierr = MPI_Iallreduce(f_sendbuf(s), r, *n, PMPI_Type_f2c(*d), PMPI_Op_f2c(*o), PMPI_Comm_f2c(*c), &q);
    *req = PMPI_Request_c2f(q);
}

void f_ireduce_scatter_block(void *s, void *r, MPI_Fint *n, MPI_Fint *d, MPI_Fint *o, MPI_Fint *c, MPI_Fint *req,
                             MPI_Fint *ierr) {
    MPI_Request q = MPI_REQUEST_NULL;
    *ierr = MPI_Ireduce_scatter_block(f_sendbuf(s), r, *n, PMPI_Type_f2c(*d), PMPI_Op_f2c(*o), PMPI_Comm_f2c(*c),
                                      &q);
    *req = PMPI_Request_c2f(q);
}

void f_ireduce_scatter(void *s, void *r, MPI_Fint *counts, MPI_Fint *d, MPI_Fint *o, MPI_Fint *c, MPI_Fint *req,
                       MPI_Fint *ierr) {
    MPI_Comm comm = PMPI_Comm_f2c(*c);
    MPI_Request q = MPI_REQUEST_NULL;
    const std::vector<int> rc = f_ints(counts, comm);
    *ierr = MPI_Ireduce_scatter(f_sendbuf(s), r, rc.data(), PMPI_Type_f2c(*d), PMPI_Op_f2c(*o), comm, &q);
    *req = PMPI_Request_c2f(q);
}

void f_iallgather(void *s, MPI_Fint *sn, MPI_Fint *sd, void *r, MPI_Fint *rn, MPI_Fint *rd, MPI_Fint *c,
                  MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request q = MPI_REQUEST_NULL;
    *ierr = MPI_Iallgather(f_sendbuf(s), *sn, PMPI_Type_f2c(*sd), r, *rn, PMPI_Type_f2c(*rd), PMPI_Comm_f2c(*c),
                           &q);
    *req = PMPI_Request_c2f(q);
}

void f_iallgatherv(void *s, MPI_Fint *sn, MPI_Fint *sd, void *r, MPI_Fint *counts, MPI_Fint *displs, MPI_Fint *rd,
                   MPI_Fint *c, MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Comm comm = PMPI_Comm_f2c(*c);
    MPI_Request q = MPI_REQUEST_NULL;
    const std::vector<int> rc = f_ints(counts, comm), rdis = f_ints(displs, comm);
    *ierr = MPI_Iallgatherv(f_sendbuf(s), *sn, PMPI_Type_f2c(*sd), r, rc.data(), rdis.data(), PMPI_Type_f2c(*rd),
                            comm, &q);
    *req = PMPI_Request_c2f(q);
}

// ---- the completion calls: the C wrappers, with requests and statuses
// converted both ways (Open MPI's Fortran status is the C one's ints).
constexpr size_t kFStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);

void f_status_out(const MPI_Status *s, MPI_Fint *f) {
    if (f != MPI_F_STATUS_IGNORE) PMPI_Status_c2f(s, f);
}
void f_statuses_out(const std::vector<MPI_Status> &s, MPI_Fint *f) {
    if (f == MPI_F_STATUSES_IGNORE) return;
    for (size_t i = 0; i < s.size(); ++i) PMPI_Status_c2f(&s[i], f + i * kFStatusInts);
}
std::vector<MPI_Request> f_requests_in(const MPI_Fint *f, MPI_Fint n) {
    std::vector<MPI_Request> r(size_t(n > 0 ? n : 0));
    for (size_t i = 0; i < r.size(); ++i) r[i] = PMPI_Request_f2c(f[i]);
    return r;
}
void f_requests_out(const std::vector<MPI_Request> &r, MPI_Fint *f) {
    for (size_t i = 0; i < r.size(); ++i) f[i] = PMPI_Request_c2f(r[i]);
}
MPI_Fint f_index(int i) { return i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1; }

void f_wait(MPI_Fint *req, MPI_Fint *st, MPI_Fint *ierr) {
    MPI_Request r = PMPI_Request_f2c(*req);
    MPI_Status s;
    *ierr = MPI_Wait(&r, &s);
    *req = PMPI_Request_c2f(r);
    f_status_out(&s, st);
}

void f_test(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr) {
    MPI_Request r = PMPI_Request_f2c(*req);
    MPI_Status s;
    int fl = 0;
    *ierr = MPI_Test(&r, &fl, &s);
    *req = PMPI_Request_c2f(r);
    *flag = fl;
    if (fl) f_status_out(&s, st);
}

void f_request_get_status(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr) {
    MPI_Status s;
    int fl = 0;
    *ierr = MPI_Request_get_status(PMPI_Request_f2c(*req), &fl, &s);
    *flag = fl;
    if (fl) f_status_out(&s, st);
}

void f_waitall(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *sts, MPI_Fint *ierr) {
    std::vector<MPI_Request> r = f_requests_in(reqs, *n);
    std::vector<MPI_Status> s(r.size());
    *ierr = MPI_Waitall(int(r.size()), r.data(), s.data());
    f_requests_out(r, reqs);
    f_statuses_out(s, sts);
}

void f_testall(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *sts, MPI_Fint *ierr) {
    std::vector<MPI_Request> r = f_requests_in(reqs, *n);
    std::vector<MPI_Status> s(r.size());
    int fl = 0;
    *ierr = MPI_Testall(int(r.size()), r.data(), &fl, s.data());
    f_requests_out(r, reqs);
    *flag = fl;
    if (fl) f_statuses_out(s, sts);
}

void f_waitany(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *st, MPI_Fint *ierr) {
    std::vector<MPI_Request> r = f_requests_in(reqs, *n);
    MPI_Status s;
    int i = MPI_UNDEFINED;
    *ierr = MPI_Waitany(int(r.size()), r.data(), &i, &s);
    f_requests_out(r, reqs);
    *index = f_index(i);
    f_status_out(&s, st);
}

void f_testany(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr) {
    std::vector<MPI_Request> r = f_requests_in(reqs, *n);
    MPI_Status s;
    int i = MPI_UNDEFINED, fl = 0;
    *ierr = MPI_Testany(int(r.size()), r.data(), &i, &fl, &s);
    f_requests_out(r, reqs);
    *index = f_index(i);
    *flag = fl;
    if (fl) f_status_out(&s, st);
}

// Waitsome and Testsome: the same but for the blocking.
template <class Call>
void f_some(Call call, MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *sts,
            MPI_Fint *ierr) {
    std::vector<MPI_Request> r = f_requests_in(reqs, *n);
    std::vector<MPI_Status> s(r.size());
    std::vector<int> idx(r.size());
    int out = 0;
    *ierr = call(int(r.size()), r.data(), &out, idx.data(), s.data());
    f_requests_out(r, reqs);
    *outcount = out;
    if (out == MPI_UNDEFINED) return;
    for (int i = 0; i < out; ++i) indices[i] = idx[size_t(i)] + 1;
    if (sts != MPI_F_STATUSES_IGNORE)
        for (int i = 0; i < out; ++i) PMPI_Status_c2f(&s[size_t(i)], sts + size_t(i) * kFStatusInts);
}

void f_request_free(MPI_Fint *req, MPI_Fint *ierr) {
    MPI_Request r = PMPI_Request_f2c(*req);
    *ierr = MPI_Request_free(&r);
    *req = PMPI_Request_c2f(r);
}

void f_init(MPI_Fint *ierr) { *ierr = MPI_Init(nullptr, nullptr); }

void f_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
    int p = 0;
    *ierr = MPI_Init_thread(nullptr, nullptr, *required, &p);
    *provided = p;
}

void f_finalize(MPI_Fint *ierr) { *ierr = MPI_Finalize(); }

}  // namespace

// The mpi_f08 name of a binding whose last parameter is `F *e` (ierror,
// OPTIONAL there): the binding writes a local and the caller's only if given.
#define TERSE_F08(name, params, args)                       \
    extern "C" void mpi_##name##_f08_ params {              \
        MPI_Fint e_local = MPI_SUCCESS, *const e_given = e; \
        e = &e_local;                                       \
        f_##name args;                                      \
        if (e_given) *e_given = e_local;                    \
    }

#define TERSE_F_ALLREDUCE(name)                                                                               \
    extern "C" void name(void *s, void *r, MPI_Fint *n, MPI_Fint *d, MPI_Fint *o, MPI_Fint *c, MPI_Fint *e) { \
        f_allreduce(s, r, n, d, o, c, e);                                                                     \
    }
TERSE_F_ALLREDUCE(mpi_allreduce_)
TERSE_F_ALLREDUCE(mpi_allreduce__)
TERSE_F_ALLREDUCE(mpi_allreduce)
TERSE_F_ALLREDUCE(MPI_ALLREDUCE)
TERSE_F08(allreduce, (void *s, void *r, MPI_Fint *n, MPI_Fint *d, MPI_Fint *o, MPI_Fint *c, MPI_Fint *e),
          (s, r, n, d, o, c, e))

#define TERSE_F_INIT(name) \
    extern "C" void name(MPI_Fint *e) { f_init(e); }
TERSE_F_INIT(mpi_init_)
TERSE_F_INIT(mpi_init__)
TERSE_F_INIT(mpi_init)
TERSE_F_INIT(MPI_INIT)
TERSE_F08(init, (MPI_Fint * e), (e))

#define TERSE_F_INIT_THREAD(name) \
    extern "C" void name(MPI_Fint *r, MPI_Fint *p, MPI_Fint *e) { f_init_thread(r, p, e); }
TERSE_F_INIT_THREAD(mpi_init_thread_)
TERSE_F_INIT_THREAD(mpi_init_thread__)
TERSE_F_INIT_THREAD(mpi_init_thread)
TERSE_F_INIT_THREAD(MPI_INIT_THREAD)
TERSE_F08(init_thread, (MPI_Fint * r, MPI_Fint *p, MPI_Fint *e), (r, p, e))

#define TERSE_F_FINALIZE(name) \
    extern "C" void name(MPI_Fint *e) { f_finalize(e); }
TERSE_F_FINALIZE(mpi_finalize_)
TERSE_F_FINALIZE(mpi_finalize__)
TERSE_F_FINALIZE(mpi_finalize)
TERSE_F_FINALIZE(MPI_FINALIZE)
TERSE_F08(finalize, (MPI_Fint * e), (e))

// The non-blocking collectives and the completion calls, under every name
// mangling compilers use.
#define TERSE_F_BIND(name, NAME, params, args)               \
    extern "C" void mpi_##name##_ params { f_##name args; }  \
    extern "C" void mpi_##name##__ params { f_##name args; } \
    extern "C" void mpi_##name params { f_##name args; }     \
    extern "C" void MPI_##NAME params { f_##name args; }     \
    TERSE_F08(name, params, args)
#define TERSE_F_SOME(name, NAME, CALL)                                                                     \
    extern "C" void mpi_##name##_(F *n, F *r, F *o, F *i, F *s, F *e) { f_some(CALL, n, r, o, i, s, e); }  \
    extern "C" void mpi_##name##__(F *n, F *r, F *o, F *i, F *s, F *e) { f_some(CALL, n, r, o, i, s, e); } \
    extern "C" void mpi_##name(F *n, F *r, F *o, F *i, F *s, F *e) { f_some(CALL, n, r, o, i, s, e); }     \
    extern "C" void MPI_##NAME(F *n, F *r, F *o, F *i, F *s, F *e) { f_some(CALL, n, r, o, i, s, e); }     \
    extern "C" void mpi_##name##_f08_(F *n, F *r, F *o, F *i, F *s, F *e) {                                \
        F e_local = MPI_SUCCESS;                                                                           \
        f_some(CALL, n, r, o, i, s, &e_local);                                                             \
        if (e) *e = e_local;                                                                               \
    }
using F = MPI_Fint;

TERSE_F_BIND(reduce_scatter_block, REDUCE_SCATTER_BLOCK, (void *s, void *r, F *n, F *d, F *o, F *c, F *e),
             (s, r, n, d, o, c, e))
TERSE_F_BIND(reduce_scatter, REDUCE_SCATTER, (void *s, void *r, F *n, F *d, F *o, F *c, F *e),
             (s, r, n, d, o, c, e))
TERSE_F_BIND(allgather, ALLGATHER, (void *s, F *sn, F *sd, void *r, F *rn, F *rd, F *c, F *e),
             (s, sn, sd, r, rn, rd, c, e))
TERSE_F_BIND(allgatherv, ALLGATHERV, (void *s, F *sn, F *sd, void *r, F *rn, F *di, F *rd, F *c, F *e),
             (s, sn, sd, r, rn, di, rd, c, e))
TERSE_F_BIND(iallreduce, IALLREDUCE, (void *s, void *r, F *n, F *d, F *o, F *c, F *q, F *e),
             (s, r, n, d, o, c, q, e))
TERSE_F_BIND(ireduce_scatter_block, IREDUCE_SCATTER_BLOCK, (void *s, void *r, F *n, F *d, F *o, F *c, F *q, F *e),
             (s, r, n, d, o, c, q, e))
TERSE_F_BIND(ireduce_scatter, IREDUCE_SCATTER, (void *s, void *r, F *n, F *d, F *o, F *c, F *q, F *e),
             (s, r, n, d, o, c, q, e))
TERSE_F_BIND(iallgather, IALLGATHER, (void *s, F *sn, F *sd, void *r, F *rn, F *rd, F *c, F *q, F *e),
             (s, sn, sd, r, rn, rd, c, q, e))
TERSE_F_BIND(iallgatherv, IALLGATHERV, (void *s, F *sn, F *sd, void *r, F *rn, F *di, F *rd, F *c, F *q, F *e),
             (s, sn, sd, r, rn, di, rd, c, q, e))
TERSE_F_BIND(wait, WAIT, (F * q, F *st, F *e), (q, st, e))
TERSE_F_BIND(test, TEST, (F * q, F *fl, F *st, F *e), (q, fl, st, e))
TERSE_F_BIND(waitall, WAITALL, (F * n, F *q, F *st, F *e), (n, q, st, e))
TERSE_F_BIND(testall, TESTALL, (F * n, F *q, F *fl, F *st, F *e), (n, q, fl, st, e))
TERSE_F_BIND(waitany, WAITANY, (F * n, F *q, F *i, F *st, F *e), (n, q, i, st, e))
TERSE_F_BIND(testany, TESTANY, (F * n, F *q, F *i, F *fl, F *st, F *e), (n, q, i, fl, st, e))
TERSE_F_BIND(request_free, REQUEST_FREE, (F * q, F *e), (q, e))
TERSE_F_BIND(request_get_status, REQUEST_GET_STATUS, (F * q, F *fl, F *st, F *e), (q, fl, st, e))
TERSE_F_SOME(waitsome, WAITSOME, MPI_Waitsome)
TERSE_F_SOME(testsome, TESTSOME, MPI_Testsome)
