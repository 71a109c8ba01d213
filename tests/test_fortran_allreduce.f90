! A Fortran program ("use mpi") must be routed through terse: Open MPI's
! Fortran bindings call PMPI_Allreduce directly, so terse defines the
! Fortran entry points.  The launcher checks terse's statistics for the
! intercepted calls; this program checks the results.
program test_fortran_allreduce
  use mpi
  implicit none
  integer, parameter :: n = 100000
  real, allocatable :: a(:), b(:)
  double precision, allocatable :: d(:)
  integer :: ierr, rank, nranks, i
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  allocate(a(n), b(n), d(n))
  do i = 1, n
    a(i) = real(mod(i, 97) * (rank + 1))
    d(i) = dble(i) + rank
  end do
  call MPI_ALLREDUCE(a, b, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 2
  do i = 1, n
    if (b(i) /= real(mod(i, 97) * nranks * (nranks + 1) / 2)) then
      print *, 'rank', rank, 'wrong sum at', i, b(i)
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 3
  do i = 1, n
    if (d(i) /= dble(i) + nranks - 1) then
      print *, 'rank', rank, 'wrong in-place max at', i, d(i)
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
  end do
  call MPI_FINALIZE(ierr)
end program test_fortran_allreduce
