# comm.Iallreduce(...).Wait() through terse (run under mpirun with
# LD_PRELOAD=libterse.so by test_nonblocking.sh, when mpi4py is installed).
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = 100003
x = np.arange(n, dtype=np.float64) + rank
y = np.empty_like(x)
req = comm.Iallreduce(x, y, op=MPI.SUM)
req.Wait()
want = size * np.arange(n, dtype=np.float64) + size * (size - 1) / 2
if not np.allclose(y, want, rtol=1e-12, atol=0):
    print("rank %d: Iallreduce result differs" % rank, file=sys.stderr)
    sys.exit(1)
# Mixed with an ordinary request in one Waitall.
g = np.empty(n * size, dtype=np.float64)
reqs = [comm.Iallgather(x, g), comm.Isend(np.array([rank], dtype=np.int32), dest=(rank + 1) % size)]
r = np.empty(1, dtype=np.int32)
reqs.append(comm.Irecv(r, source=(rank - 1) % size))
MPI.Request.Waitall(reqs)
if r[0] != (rank - 1) % size or not np.array_equal(g.reshape(size, n)[rank], x):
    print("rank %d: Iallgather / exchange differ" % rank, file=sys.stderr)
    sys.exit(1)
