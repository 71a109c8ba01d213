// Fortran entry points.  Open MPI's mpif.h / "use mpi" bindings call
// PMPI_* directly, so a C-only MPI_Allreduce wrapper would never see
// Fortran calls; terse defines the Fortran symbols itself (all the name
// manglings compilers use) and converts the handles.
#include "dispatch.h"

#include <mpi.h>

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
    return p && (p == &mpi_fortran_in_place_ || p == &mpi_fortran_in_place ||
                 p == &mpi_fortran_in_place__ || p == &MPI_FORTRAN_IN_PLACE);
}

void f_allreduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                 MPI_Fint *comm, MPI_Fint *ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype dt = PMPI_Type_f2c(*datatype);
    MPI_Op o = PMPI_Op_f2c(*op);
    const void *sb = is_fortran_in_place(sendbuf) ? MPI_IN_PLACE : sendbuf;
    *ierr = terse::dispatch_allreduce(sb, recvbuf, *count, dt, o, c);
}

void f_init(MPI_Fint *ierr) { *ierr = MPI_Init(nullptr, nullptr); }

void f_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
    int p = 0;
    *ierr = MPI_Init_thread(nullptr, nullptr, *required, &p);
    *provided = p;
}

void f_finalize(MPI_Fint *ierr) { *ierr = MPI_Finalize(); }

}  // namespace

#define TERSE_F_ALLREDUCE(name)                                                                  \
    extern "C" void name(void *s, void *r, MPI_Fint *n, MPI_Fint *d, MPI_Fint *o, MPI_Fint *c,   \
                         MPI_Fint *e) {                                                          \
        f_allreduce(s, r, n, d, o, c, e);                                                        \
    }
TERSE_F_ALLREDUCE(mpi_allreduce_)
TERSE_F_ALLREDUCE(mpi_allreduce__)
TERSE_F_ALLREDUCE(mpi_allreduce)
TERSE_F_ALLREDUCE(MPI_ALLREDUCE)

#define TERSE_F_INIT(name) \
    extern "C" void name(MPI_Fint *e) { f_init(e); }
TERSE_F_INIT(mpi_init_)
TERSE_F_INIT(mpi_init__)
TERSE_F_INIT(mpi_init)
TERSE_F_INIT(MPI_INIT)

#define TERSE_F_INIT_THREAD(name) \
    extern "C" void name(MPI_Fint *r, MPI_Fint *p, MPI_Fint *e) { f_init_thread(r, p, e); }
TERSE_F_INIT_THREAD(mpi_init_thread_)
TERSE_F_INIT_THREAD(mpi_init_thread__)
TERSE_F_INIT_THREAD(mpi_init_thread)
TERSE_F_INIT_THREAD(MPI_INIT_THREAD)

#define TERSE_F_FINALIZE(name) \
    extern "C" void name(MPI_Fint *e) { f_finalize(e); }
TERSE_F_FINALIZE(mpi_finalize_)
TERSE_F_FINALIZE(mpi_finalize__)
TERSE_F_FINALIZE(mpi_finalize)
TERSE_F_FINALIZE(MPI_FINALIZE)
