// The per-thread scratch cache (lib/util/scratch.h): a steady stream of
// operations gets the same buffers back every time, whole-input copies
// larger than the base budget included (they were unmapped and faulted in
// again every call when the cache dropped them); buffers left idle are
// freed; scratch_release_cache() trims back to the base budget.  Buffers
// are never written, so the large ones cost address space only.
#include "util/scratch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

using terse::scratch_cached_bytes;
using terse::scratch_release_cache;
using terse::ScratchBuffer;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

// The buffers of one operation: chunk scratch and frames, and (as with
// error feedback or verification) a copy of a large input.
struct Op {
    ScratchBuffer chunk_a, chunk_b, frame, input_copy;
    std::vector<ScratchBuffer> frames;
    void reserve(size_t input_bytes) {
        ASSERT_EQ(chunk_a.reserve(kMiB), TERSE_OK);
        ASSERT_EQ(chunk_b.reserve(kMiB), TERSE_OK);
        ASSERT_EQ(frame.reserve(kMiB + 64), TERSE_OK);
        frames.resize(8);
        for (auto &f : frames) ASSERT_EQ(f.reserve(kMiB + 64), TERSE_OK);
        ASSERT_EQ(input_copy.reserve(input_bytes), TERSE_OK);
    }
    std::vector<const void *> pointers() const {
        std::vector<const void *> p{chunk_a.data(), chunk_b.data(), frame.data(), input_copy.data()};
        for (auto &f : frames) p.push_back(f.data());
        return p;
    }
};

std::vector<const void *> sorted(std::vector<const void *> v) {
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

// Run in fresh threads: each has its own cache, so tests do not see each
// other's buffers.
template <class F>
void in_thread(F f) {
    std::thread t(f);
    t.join();
}

TEST(Scratch, SteadyStreamReusesItsWholeWorkingSet) {
    for (size_t input : {4 * kMiB, 96 * kMiB, 200 * kMiB})
        in_thread([input] {
            std::vector<const void *> first;
            for (int call = 0; call < 5; ++call) {
                Op op;
                op.reserve(input);
                if (call == 0) first = sorted(op.pointers());
                else ASSERT_EQ(sorted(op.pointers()), first) << "input " << input << ", call " << call;
            }
            EXPECT_GE(scratch_cached_bytes(), input + 11 * kMiB);
        });
}

TEST(Scratch, IdleBuffersAreFreed) {
    in_thread([] {
        {
            Op op;
            op.reserve(96 * kMiB);
        }
        EXPECT_GE(scratch_cached_bytes(), 96 * kMiB);
        // Many small operations later, the large copy is gone.
        for (int i = 0; i < 5000; ++i) {
            ScratchBuffer b;
            ASSERT_EQ(b.reserve(4096), TERSE_OK);
        }
        EXPECT_LT(scratch_cached_bytes(), 96 * kMiB);
    });
}

TEST(Scratch, ReleaseTrimsBackToTheBaseBudget) {
    in_thread([] {
        {
            Op op;
            op.reserve(200 * kMiB);
        }
        EXPECT_GE(scratch_cached_bytes(), 200 * kMiB);
        scratch_release_cache();
        EXPECT_LE(scratch_cached_bytes(), 64 * kMiB);
    });
}
