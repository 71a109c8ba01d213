! Fortran ("use mpi") non-blocking collectives through terse: MPI_IALLREDUCE
! (and in place), MPI_IALLGATHERV, MPI_IREDUCE_SCATTER completed with
! MPI_WAITALL mixed with MPI_ISEND/MPI_IRECV, MPI_WAITANY and MPI_TEST;
! then the blocking MPI_REDUCE_SCATTER_BLOCK, MPI_REDUCE_SCATTER,
! MPI_ALLGATHER and MPI_ALLGATHERV.
! The launcher checks terse's statistics; this program checks the results.
program test_fortran_nonblocking
  use mpi
  implicit none
  integer, parameter :: n = 50000
  double precision, allocatable :: a(:), b(:), g(:)
  integer, allocatable :: counts(:), displs(:)
  integer :: ierr, rank, nranks, i, idx, sendv, recvv
  integer :: reqs(4), st(MPI_STATUS_SIZE)
  logical :: flag
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  allocate(a(n), b(n), g(n * nranks), counts(nranks), displs(nranks))
  do i = 1, n
    a(i) = dble(mod(i, 97) * (rank + 1))
  end do
  do i = 1, nranks
    counts(i) = n
    displs(i) = (i - 1) * n
  end do
  sendv = rank
  recvv = -1
  call MPI_IALLREDUCE(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IALLGATHERV(a, n, MPI_DOUBLE_PRECISION, g, counts, displs, MPI_DOUBLE_PRECISION, &
                       MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_IRECV(recvv, 1, MPI_INTEGER, mod(rank + nranks - 1, nranks), 5, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_ISEND(sendv, 1, MPI_INTEGER, mod(rank + 1, nranks), 5, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_WAITALL(4, reqs, MPI_STATUSES_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) stop 2
  if (recvv /= mod(rank + nranks - 1, nranks)) stop 3
  do i = 1, n
    if (b(i) /= dble(mod(i, 97) * nranks * (nranks + 1) / 2)) then
      print *, 'rank', rank, 'wrong sum at', i, b(i)
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
    if (g((nranks - 1) * n + i) /= dble(mod(i, 97) * nranks)) then
      print *, 'rank', rank, 'wrong allgatherv at', i
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
  end do
  ! In place, completed by MPI_WAITANY; then a reduce-scatter by MPI_TEST.
  b = a
  call MPI_IALLREDUCE(MPI_IN_PLACE, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_WAITANY(1, reqs, idx, st, ierr)
  if (ierr /= MPI_SUCCESS .or. idx /= 1 .or. reqs(1) /= MPI_REQUEST_NULL) stop 4
  if (b(n) /= dble(mod(n, 97) * nranks * (nranks + 1) / 2)) stop 5
  g(1:n * nranks) = 1.0d0
  call MPI_IREDUCE_SCATTER(g, b, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_TEST(reqs(1), flag, st, ierr)
  end do
  if (b(1) /= dble(nranks) .or. b(n) /= dble(nranks)) stop 6
  ! The blocking decoupled calls.
  do i = 1, n * nranks
    g(i) = dble(mod(i, 89) + rank)
  end do
  b = -1.0d0
  call MPI_REDUCE_SCATTER_BLOCK(g, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 7
  do i = 1, n
    if (b(i) /= dble(nranks * mod(rank * n + i, 89) + nranks * (nranks - 1) / 2)) then
      print *, 'rank', rank, 'wrong reduce_scatter_block at', i, b(i)
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
  end do
  b = -1.0d0
  call MPI_REDUCE_SCATTER(g, b, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 8
  if (b(n) /= dble(nranks * mod(rank * n + n, 89) + nranks * (nranks - 1) / 2)) stop 9
  g = -1.0d0
  call MPI_ALLGATHER(a, n, MPI_DOUBLE_PRECISION, g, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 10
  if (g((nranks - 1) * n + 1) /= dble(mod(1, 97) * nranks)) stop 11
  g = -1.0d0
  call MPI_ALLGATHERV(a, n, MPI_DOUBLE_PRECISION, g, counts, displs, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 12
  if (g(n * nranks) /= dble(mod(n, 97) * nranks)) stop 13
  call MPI_FINALIZE(ierr)
end program test_fortran_nonblocking
