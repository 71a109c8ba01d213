// The two-level schedule's node reduce-scatter (runtime/node_reduce_scatter.h)
// against PMPI_Reduce_scatter, on every rank of MPI_COMM_WORLD (one node):
// float32, float64, int32 and int64; sum, max and min; in place and not;
// shards of several pieces (NodeReduceScatter::kPieceBytes) and not, uneven
// ones, and ranks with no shard (a larger node's ranks past the rails).
// Values are small integers, so every order of summation gives the same
// bits: the result must equal the MPI library's exactly.
//
//   test_node_reduce_scatter   (run by test_node_reduce_scatter.sh with 1-4 ranks)
#include "runtime/node_reduce_scatter.h"

#include "runtime/engine_ports.h"

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mpi_check.h"

using namespace terse;

namespace {

int g_rank, g_size;

template <class T>
void one_case(NodeReduceScatter &rs, terse_dtype_t dt, terse_op_t op, const std::vector<int> &counts,
              bool in_place) {
    size_t total = 0;
    for (int c : counts) total += size_t(c);
    const size_t mine = size_t(counts[size_t(g_rank)]);
    std::vector<T> in(total), expect(mine + 1), got(in_place ? total : mine + 1);
    for (size_t i = 0; i < total; ++i) in[i] = T(int((i * 7 + size_t(g_rank) * 13) % 97) - 48);
    // A sentinel past the shard: nothing may be written there.
    const T sentinel = T(12345);
    expect[mine] = sentinel;
    CHECK(PMPI_Reduce_scatter(in.data(), expect.data(), counts.data(), mpi_type(dt), mpi_op(op),
                              MPI_COMM_WORLD) == MPI_SUCCESS,
          "PMPI_Reduce_scatter");
    Status s;
    if (in_place) {
        got = in;
        s = rs.run(MPI_COMM_WORLD, got.data(), got.data(), counts.data(), dt, op);
    } else {
        got[mine] = sentinel;
        s = rs.run(MPI_COMM_WORLD, in.data(), got.data(), counts.data(), dt, op);
    }
    CHECK(s == TERSE_OK, "run failed: %s", last_error());
    CHECK(std::memcmp(got.data(), expect.data(), mine * sizeof(T)) == 0,
          "dtype %d op %d, %zu elements of %zu, in place %d: the shard differs from PMPI_Reduce_scatter's",
          int(dt), int(op), mine, total, int(in_place));
    if (!in_place) CHECK(got[mine] == sentinel, "written past the shard");
}

template <class T>
void each_layout(NodeReduceScatter &rs, terse_dtype_t dt) {
    const size_t piece = NodeReduceScatter::kPieceBytes / sizeof(T);
    std::vector<std::vector<int>> layouts;
    for (size_t per : {size_t(1), size_t(1000), 2 * piece + 3}) {
        std::vector<int> even(static_cast<size_t>(g_size), static_cast<int>(per));
        layouts.push_back(even);
        // Uneven: each rank one element more than the last.
        std::vector<int> uneven(static_cast<size_t>(g_size));
        for (int q = 0; q < g_size; ++q) uneven[size_t(q)] = int(per) + q;
        layouts.push_back(uneven);
        // The last rank without a shard (a larger node's rank past the rails).
        if (g_size > 1) {
            std::vector<int> short_node = even;
            short_node.back() = 0;
            layouts.push_back(short_node);
        }
    }
    for (const auto &counts : layouts)
        for (terse_op_t op : {TERSE_OP_SUM, TERSE_OP_MAX, TERSE_OP_MIN})
            for (bool in_place : {false, true}) one_case<T>(rs, dt, op, counts, in_place);
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    NodeReduceScatter rs;
    each_layout<float>(rs, TERSE_DTYPE_FLOAT32);
    each_layout<double>(rs, TERSE_DTYPE_FLOAT64);
    each_layout<int32_t>(rs, TERSE_DTYPE_INT32);
    each_layout<int64_t>(rs, TERSE_DTYPE_INT64);
    // A dtype the exchange does not carry is refused on every rank alike.
    int counts[64];
    for (int q = 0; q < g_size && q < 64; ++q) counts[q] = 1;
    uint16_t half[64] = {};
    Status s = rs.run(MPI_COMM_WORLD, half, half, counts, TERSE_DTYPE_FLOAT16, TERSE_OP_SUM);
    CHECK(s == TERSE_ERR_UNSUPPORTED, "float16 accepted");
    CHECK(std::strstr(last_error(), "float32, float64, int32 and int64") != nullptr, "message: %s", last_error());
    if (g_rank == 0) std::printf("test_node_reduce_scatter: %d ranks passed\n", g_size);
    MPI_Finalize();
    return 0;
}
