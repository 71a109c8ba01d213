// Steady state allocates nothing: after a few warm-up calls, an intercepted
// MPI_Allreduce on the same communicator makes no heap allocation through
// operator new (terse's own objects: operations, links, control requests,
// stream and frame bookkeeping).  The MPI library and UCX allocate with
// their own pools and malloc, which this test does not see; terse's scratch
// buffers come from a per-thread cache (util/scratch.h) and are counted by
// the RSS test instead.
//
//   test_steady_allocations CALLS COUNT [double]
//     CALLS counted calls of COUNT elements (float, or double), after warm-up;
//     every rank prints its count and the test fails if any rank allocated.
// Run by test_steady_allocations.sh for each schedule and a lossy codec.
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string_view>
#include <vector>

#include "mpi_check.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<unsigned long> g_news{0};

void *counted_new(std::size_t n) {
    if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void *counted_new_aligned(std::size_t n, std::align_val_t al) {
    if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
    std::size_t a = static_cast<std::size_t>(al);
    if (void *p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
    throw std::bad_alloc();
}
}  // namespace

// Replacing the global operator new in the executable replaces it for every
// shared object of the process, libterse included.
void *operator new(std::size_t n) { return counted_new(n); }
void *operator new[](std::size_t n) { return counted_new(n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
    try {
        return counted_new(n);
    } catch (...) {
        return nullptr;
    }
}
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept {
    try {
        return counted_new(n);
    } catch (...) {
        return nullptr;
    }
}
void *operator new(std::size_t n, std::align_val_t a) { return counted_new_aligned(n, a); }
void *operator new[](std::size_t n, std::align_val_t a) { return counted_new_aligned(n, a); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }

#define CALL(x) CHECK((x) == MPI_SUCCESS, "%s", #x)

namespace {
template <typename T>
int run(int calls, size_t count, MPI_Datatype dt, int rank) {
    std::vector<T> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = T((i * 7 + size_t(rank) * 13) % 101) / T(7);
    // Warm-up: the communicator's context, codec instances, pools and caches.
    for (int i = 0; i < 8; ++i)
        CALL(MPI_Allreduce(in.data(), out.data(), int(count), dt, MPI_SUM, MPI_COMM_WORLD));
    CALL(MPI_Allreduce(MPI_IN_PLACE, out.data(), int(count), dt, MPI_SUM, MPI_COMM_WORLD));
    g_news.store(0);
    g_counting.store(true);
    for (int i = 0; i < calls; ++i) {
        CALL(MPI_Allreduce(in.data(), out.data(), int(count), dt, MPI_SUM, MPI_COMM_WORLD));
        if (i % 16 == 0) CALL(MPI_Allreduce(MPI_IN_PLACE, out.data(), int(count), dt, MPI_SUM, MPI_COMM_WORLD));
    }
    g_counting.store(false);
    unsigned long mine = g_news.load(), most = 0;
    PMPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
    std::printf("rank %d: %lu allocations in %d calls of %zu elements\n", rank, mine, calls, count);
    if (rank == 0 && most != 0)
        std::fprintf(stderr, "FAIL: steady-state calls allocated (at most %lu on one rank)\n", most);
    return most == 0 ? 0 : 1;
}
}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc < 3) {
        if (rank == 0) std::fprintf(stderr, "usage: %s CALLS COUNT [double]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    const int calls = std::atoi(argv[1]);
    const size_t count = size_t(std::atol(argv[2]));
    const bool dbl = argc > 3 && std::string_view(argv[3]) == "double";
    int rc = dbl ? run<double>(calls, count, MPI_DOUBLE, rank) : run<float>(calls, count, MPI_FLOAT, rank);
    MPI_Finalize();
    return rc;
}
