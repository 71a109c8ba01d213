// The staging of device buffers (device/staging_pool.h, chunked_copy.h,
// staged_call.h) against the fake CUDA driver of tests/fake_cuda, whose
// "device memory" host code cannot touch: the pool reuses its slots and
// keeps its bound, the chunked copy moves every piece in order from any
// thread, a staged call copies in and back exactly its regions, and
// reading device memory from host code does crash (the guard the
// multi-rank test relies on is real).  Run by test_device_staging.sh,
// which points LD_LIBRARY_PATH at the fake driver; skipped otherwise.
#include "device/chunked_copy.h"
#include "device/cuda_driver.h"
#include "device/mem_kind.h"
#include "device/staged_call.h"
#include "device/staging_pool.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstring>
#include <thread>
#include <vector>

using namespace terse::device;

namespace {

struct Fake {
    CUcontext (*context)() = nullptr;
    unsigned long long (*async_copies)() = nullptr;
    unsigned long long (*live_objects)() = nullptr;
    CUresult (*alloc)(CUdeviceptr *, size_t) = nullptr;
    CUresult (*free)(CUdeviceptr) = nullptr;
    CUresult (*htod)(CUdeviceptr, const void *, size_t) = nullptr;
    CUresult (*dtoh)(void *, CUdeviceptr, size_t) = nullptr;
};

// The fake driver, when it is the libcuda.so.1 this process finds.
const Fake *fake() {
    static Fake f;
    static bool ok = [] {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return false;
        f.context = reinterpret_cast<CUcontext (*)()>(dlsym(lib, "fake_cuda_context"));
        f.async_copies = reinterpret_cast<unsigned long long (*)()>(dlsym(lib, "fake_cuda_async_copies"));
        f.live_objects = reinterpret_cast<unsigned long long (*)()>(dlsym(lib, "fake_cuda_live_objects"));
        f.alloc = reinterpret_cast<decltype(f.alloc)>(dlsym(lib, "cuMemAlloc_v2"));
        f.free = reinterpret_cast<decltype(f.free)>(dlsym(lib, "cuMemFree_v2"));
        f.htod = reinterpret_cast<decltype(f.htod)>(dlsym(lib, "cuMemcpyHtoD_v2"));
        f.dtoh = reinterpret_cast<decltype(f.dtoh)>(dlsym(lib, "cuMemcpyDtoH_v2"));
        return f.context && f.async_copies && f.live_objects;
    }();
    return ok ? &f : nullptr;
}

class Staging : public ::testing::Test {
protected:
    void SetUp() override {
        if (!fake()) GTEST_SKIP() << "libcuda.so.1 is not tests/fake_cuda's (run through test_device_staging.sh)";
        ASSERT_NE(cuda_driver(), nullptr) << cuda_driver_absence();
        d_ = cuda_driver();
        // The application's thread has its context current.
        ASSERT_EQ(d_->ctx_push(fake()->context()), CUDA_SUCCESS);
    }
    void TearDown() override {
        if (!d_) return;
        CUcontext c;
        d_->ctx_pop(&c);
        for (CUdeviceptr p : allocs_) fake()->free(p);
    }
    char *dev(size_t bytes) {
        CUdeviceptr p = 0;
        EXPECT_EQ(fake()->alloc(&p, bytes), CUDA_SUCCESS);
        allocs_.push_back(p);
        return reinterpret_cast<char *>(p);
    }
    void put(char *d, const std::vector<char> &h) {
        ASSERT_EQ(fake()->htod(CUdeviceptr(d), h.data(), h.size()), 0);
    }
    std::vector<char> get(const char *d, size_t n) {
        std::vector<char> h(n);
        EXPECT_EQ(fake()->dtoh(h.data(), CUdeviceptr(d), n), 0);
        return h;
    }
    static std::vector<char> pattern(size_t n, int salt) {
        std::vector<char> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = char(i * 131 + salt * 7 + (i >> 12));
        return v;
    }

    const CudaDriver *d_ = nullptr;
    std::vector<CUdeviceptr> allocs_;
};

TEST_F(Staging, PoolReusesSlotsBySizeAndKeepsItsBound) {
    StagingPool pool(*d_, 4 << 20);
    std::unique_ptr<StagingSlot> a, b, c;
    ASSERT_EQ(pool.acquire(fake()->context(), 3 << 20, &a), TERSE_OK);
    EXPECT_EQ(a->host.size(), size_t(4) << 20);  // rounded up to a power of two
    ASSERT_EQ(pool.acquire(fake()->context(), 100, &b), TERSE_OK);
    EXPECT_EQ(b->host.size(), kStagingMinSlot);
    void *a_mem = a->host.data();
    pool.release(std::move(a));
    ASSERT_EQ(pool.acquire(fake()->context(), 2 << 20, &c), TERSE_OK);
    EXPECT_EQ(c->host.data(), a_mem);  // the idle slot, not a new one
    StagingPoolCounters k = pool.counters();
    EXPECT_EQ(k.allocations, 2u);
    EXPECT_EQ(k.reuses, 1u);
    // 4 MiB idle at most: the second slot given back is freed.
    pool.release(std::move(c));
    pool.release(std::move(b));
    k = pool.counters();
    EXPECT_EQ(k.freed, 1u);
    EXPECT_EQ(k.idle_bytes, size_t(4) << 20);
    pool.clear();
    EXPECT_EQ(pool.counters().idle_bytes, 0u);
}

TEST_F(Staging, ChunkedCopyMovesEveryPieceInOrderFromAnyThread) {
    const size_t n = (10 << 20) + 123, piece = 1 << 20, pieces = 11;
    char *d = dev(n);
    const std::vector<char> src = pattern(n, 1);
    put(d, src);
    StagingPool pool(*d_, 64 << 20);
    std::unique_ptr<StagingSlot> slot;
    ASSERT_EQ(pool.acquire(fake()->context(), n, &slot), TERSE_OK);
    // On a thread with no context current (as the progress thread is).
    std::vector<std::pair<size_t, size_t>> seen;
    const unsigned long long before = fake()->async_copies();
    terse::Status s = TERSE_ERR_INVALID;
    std::thread t([&] {
        s = chunked_copy(
            *d_, *slot, CopyDirection::ToHost, CUdeviceptr(d), n, piece, [&](size_t off, size_t len) {
                // Piece j arrived; the host copy of it is complete.
                EXPECT_EQ(memcmp(static_cast<char *>(slot->host.data()) + off, src.data() + off, len), 0);
                seen.emplace_back(off, len);
                return TERSE_OK;
            });
    });
    t.join();
    ASSERT_EQ(s, TERSE_OK) << terse::last_error();
    EXPECT_EQ(fake()->async_copies() - before, pieces);
    ASSERT_EQ(seen.size(), pieces);
    for (size_t j = 0; j < pieces; ++j) {
        EXPECT_EQ(seen[j].first, j * piece);
        EXPECT_EQ(seen[j].second, j + 1 < pieces ? piece : n - j * piece);
    }
    // And back, changed.
    const std::vector<char> back = pattern(n, 2);
    memcpy(slot->host.data(), back.data(), n);
    ASSERT_EQ(chunked_copy(*d_, *slot, CopyDirection::ToDevice, CUdeviceptr(d), n, piece), TERSE_OK);
    EXPECT_EQ(get(d, n), back);
    // More than the slot holds is refused, not overrun.
    EXPECT_EQ(chunked_copy(*d_, *slot, CopyDirection::ToHost, CUdeviceptr(d), slot->host.size() + 1),
              TERSE_ERR_INVALID);
    pool.release(std::move(slot));
}

TEST_F(Staging, StagedCallCopiesItsRegionsInAndBack) {
    const size_t n = 3 << 20;
    char *send = dev(n), *recv = dev(n + 64);
    put(send, pattern(n, 3));
    put(recv, pattern(n + 64, 4));
    ASSERT_EQ(buffer_mem_kind(send, n), TERSE_MEM_CUDA);
    const uint64_t calls = device_calls_staged(), bytes = device_bytes_staged();
    {
        StagedCall sc;
        // recv's region starts 64 bytes in (a datatype's lower bound) and is
        // only written: nothing copied in.
        StageRegion rs{send, 0, n, true}, rr{recv, 64, n, false};
        ASSERT_EQ(sc.begin(rs, rr), TERSE_OK) << terse::last_error();
        EXPECT_TRUE(sc.any());
        EXPECT_EQ(buffer_mem_kind(sc.send(), n), TERSE_MEM_CUDA_HOST);  // pinned memory of the pool
        EXPECT_EQ(memcmp(sc.send(), pattern(n, 3).data(), n), 0);
        const std::vector<char> result = pattern(n, 5);
        memcpy(static_cast<char *>(sc.recv()) + 64, result.data(), n);
        ASSERT_EQ(sc.finish(), TERSE_OK);
        std::vector<char> want = pattern(n + 64, 4);
        memcpy(want.data() + 64, result.data(), n);
        EXPECT_EQ(get(recv, n + 64), want);  // the 64 bytes before the region untouched
        EXPECT_EQ(sc.finish(), TERSE_OK);    // once only
    }
    EXPECT_EQ(device_calls_staged() - calls, 1u);
    EXPECT_EQ(device_bytes_staged() - bytes, 2 * n);
}

TEST_F(Staging, HostBuffersAreUsedWhereTheyAre) {
    std::vector<char> a(1 << 20), b(1 << 20);
    const uint64_t calls = device_calls_staged();
    StagedCall sc;
    ASSERT_EQ(sc.begin(StageRegion{a.data(), 0, a.size(), true}, StageRegion{b.data(), 0, b.size(), true}),
              TERSE_OK);
    EXPECT_FALSE(sc.any());
    EXPECT_EQ(sc.send(), a.data());
    EXPECT_EQ(sc.recv(), b.data());
    EXPECT_EQ(sc.finish(), TERSE_OK);
    EXPECT_EQ(device_calls_staged(), calls);
    // In place: no send buffer.
    StagedCall in_place;
    ASSERT_EQ(in_place.begin(StageRegion{}, StageRegion{b.data(), 0, b.size(), true}), TERSE_OK);
    EXPECT_EQ(in_place.send(), nullptr);
}

TEST_F(Staging, EverythingIsReleased) {
    {
        StagedCall sc;
        char *d = dev(1 << 20);
        ASSERT_EQ(sc.begin(StageRegion{d, 0, 1 << 20, true}, StageRegion{}), TERSE_OK);
    }
    staging_release_idle();
    EXPECT_EQ(fake()->live_objects(), 0u);  // pinned memory, streams, events
}

using StagingDeathTest = Staging;

TEST_F(StagingDeathTest, HostCodeReadingDeviceMemoryCrashes) {
    char *d = dev(4096);
    put(d, pattern(4096, 6));
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            volatile char c = d[100];
            (void)c;
        },
        "");
}

}  // namespace
