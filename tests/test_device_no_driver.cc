// terse without a CUDA driver (this is what every machine without a GPU
// is): host buffers are host memory, the missing driver is a state with a
// reason, not an error, and detection afterwards is the one-branch fast
// path.  Where a driver is present (a GPU machine) the no-driver half is
// skipped, the host half still holds.
#include "device/cuda_driver.h"
#include "device/mem_kind.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <string>

using namespace terse::device;

namespace {

TEST(DeviceNoDriver, HostBuffersAreHostMemory) {
    std::unique_ptr<char[]> heap(new char[1 << 20]);
    static char in_data[64];
    int on_stack = 0;
    EXPECT_EQ(buffer_mem_kind(heap.get(), 1 << 20), TERSE_MEM_HOST);
    EXPECT_EQ(buffer_mem_kind(in_data, sizeof in_data), TERSE_MEM_HOST);
    EXPECT_EQ(buffer_mem_kind(&on_stack, 0), TERSE_MEM_HOST);
    EXPECT_EQ(buffer_mem_kind(nullptr, 0), TERSE_MEM_HOST);
}

TEST(DeviceNoDriver, ACallIsOfTheKindTheFewestCanRead) {
    EXPECT_EQ(mem_kind_of_call(TERSE_MEM_HOST, TERSE_MEM_HOST), TERSE_MEM_HOST);
    EXPECT_EQ(mem_kind_of_call(TERSE_MEM_HOST, TERSE_MEM_CUDA), TERSE_MEM_CUDA);
    EXPECT_EQ(mem_kind_of_call(TERSE_MEM_CUDA, TERSE_MEM_CUDA_MANAGED), TERSE_MEM_CUDA);
    EXPECT_EQ(mem_kind_of_call(TERSE_MEM_CUDA_HOST, TERSE_MEM_CUDA_MANAGED), TERSE_MEM_CUDA_MANAGED);
    EXPECT_EQ(mem_kind_of_call(TERSE_MEM_CUDA_HOST, TERSE_MEM_HOST), TERSE_MEM_CUDA_HOST);
}

TEST(DeviceNoDriver, NoDriverIsAStateNotAnError) {
    if (void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
        dlclose(lib);
        GTEST_SKIP() << "this machine has a CUDA driver";
    }
    EXPECT_FALSE(driver_present());
    EXPECT_FALSE(driver_loaded());
    // Asked again: the same answer, and buffers are host memory from the
    // flag alone.
    EXPECT_FALSE(driver_present());
    EXPECT_EQ(detail::g_driver_state.load(), 1);
    int x = 0;
    EXPECT_EQ(buffer_mem_kind(&x, sizeof x), TERSE_MEM_HOST);
    const MemKindCounters c = mem_kind_counters();
    EXPECT_EQ(c.hits + c.misses + c.stale + c.host, 0u);
    EXPECT_EQ(device_calls_passed(), 0u);
#ifdef TERSE_HAVE_CUDA
    EXPECT_EQ(cuda_driver(), nullptr);
    EXPECT_NE(std::string(cuda_driver_absence()).find("libcuda.so.1"), std::string::npos)
        << cuda_driver_absence();
#endif
}

}  // namespace
