! A "use mpi_f08" program must be routed through terse as a "use mpi" one
! is: Open MPI's f08 bindings (mpi_allreduce_f08_ ...) call PMPI_* too.
! ierror is OPTIONAL in mpi_f08, so some calls here leave it out (terse
! must not write through the null pointer).  Blocking MPI_Allreduce (and in
! place), MPI_Iallreduce completed by MPI_Wait and by MPI_Request_get_status then MPI_Test loops,
! MPI_Iallgather beside point-to-point requests in MPI_Waitall, and the
! blocking decoupled calls.  The launcher checks terse's statistics; this
! program checks the results.
program test_fortran_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 60000
  real, allocatable :: a(:), b(:)
  double precision, allocatable :: d(:), g(:)
  integer :: ierr, rank, nranks, i, sendv, recvv
  type(MPI_Request) :: req, reqs(3)
  type(MPI_Status) :: st
  logical :: flag
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  allocate(a(n), b(n), d(n), g(n * nranks))
  do i = 1, n
    a(i) = real(mod(i, 97) * (rank + 1))
    d(i) = dble(i) + rank
  end do
  call MPI_Allreduce(a, b, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 2
  call check_sum(b, 1)
  ! In place, no ierror.
  call MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
  do i = 1, n
    if (d(i) /= dble(i) + nranks - 1) then
      print *, 'rank', rank, 'wrong in-place max at', i, d(i)
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end do
  ! Non-blocking, waited; then tested in a loop.
  b = 0
  call MPI_Iallreduce(a, b, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call check_sum(b, 3)
  b = a
  call MPI_Iallreduce(MPI_IN_PLACE, b, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  if (ierr /= MPI_SUCCESS) stop 4
  flag = .false.
  do while (.not. flag)
    call MPI_Request_get_status(req, flag, st, ierr)
  end do
  if (req == MPI_REQUEST_NULL) stop 8
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req, flag, st, ierr)
  end do
  if (req /= MPI_REQUEST_NULL) stop 5
  call check_sum(b, 6)
  ! An allgather beside point-to-point requests.
  sendv = rank
  recvv = -1
  d = dble(rank + 1)
  call MPI_Iallgather(d, n, MPI_DOUBLE_PRECISION, g, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, reqs(1))
  call MPI_Irecv(recvv, 1, MPI_INTEGER, mod(rank + nranks - 1, nranks), 5, MPI_COMM_WORLD, reqs(2))
  call MPI_Isend(sendv, 1, MPI_INTEGER, mod(rank + 1, nranks), 5, MPI_COMM_WORLD, reqs(3))
  call MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) stop 7
  if (recvv /= mod(rank + nranks - 1, nranks)) stop 8
  do i = 1, nranks
    if (g((i - 1) * n + 1) /= dble(i) .or. g(i * n) /= dble(i)) stop 9
  end do
  ! The blocking decoupled calls.
  g = 1.0d0
  d = -1.0d0
  call MPI_Reduce_scatter_block(g, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (d(1) /= dble(nranks) .or. d(n) /= dble(nranks)) stop 10
  g = -1.0d0
  d = dble(rank)
  call MPI_Allgather(d, n, MPI_DOUBLE_PRECISION, g, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 11
  if (g(nranks * n) /= dble(nranks - 1)) stop 12
  call MPI_Finalize()
contains
  subroutine check_sum(x, code)
    real, intent(in) :: x(:)
    integer, intent(in) :: code
    integer :: j
    do j = 1, n
      if (x(j) /= real(mod(j, 97) * nranks * (nranks + 1) / 2)) then
        print *, 'rank', rank, 'check', code, 'wrong sum at', j, x(j)
        call MPI_Abort(MPI_COMM_WORLD, 1)
      end if
    end do
  end subroutine check_sum
end program test_fortran_f08
