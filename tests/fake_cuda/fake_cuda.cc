// A CUDA driver for tests only, built as libcuda.so.1 in the build tree
// (never installed), so that staging device buffers is tested on machines
// without a GPU.  "Device memory" is a host arena whose pages are PROT_NONE
// except while this driver itself copies into or out of them: any other
// host code that touches a device buffer (terse's engine, the MPI
// library) takes SIGSEGV, so a test that passes shows that nothing but
// the driver's copies read or wrote device memory.
//
// It implements the entry points terse resolves (device/cuda_driver.cc:
// device memory for the device codecs' lanes among them) and the few a
// test program or test codec needs (the synchronous copies), with the real driver's answers where terse reads
// them: cuPointerGetAttributes reports device memory, pinned host memory
// and unknown pointers as the driver does; every call that needs a
// context fails with CUDA_ERROR_INVALID_CONTEXT when the calling thread
// has none current, so terse must push the buffer's context on whichever
// thread copies.  Asynchronous copies run at once, in the caller (a stream
// in order is then trivially respected); they accept only pinned host
// memory from cuMemHostAlloc, as staging must use.
//
// The legacy default stream, adversarially: a synchronous cuMemcpyHtoD
// from pageable memory returns before its bytes land (the real driver may
// return once they are in its own staging buffer), and they land only when
// something ordered after the legacy stream runs: another synchronous copy,
// work on a blocking stream (created with flags 0), cuMemFree.  Work on a
// CU_STREAM_NON_BLOCKING stream does not wait for them and reads the old
// bytes, as it may on a GPU (seen on an H200: terse's staging read stale
// inputs until its streams were made blocking).
//
// fake_cuda_*() are for the tests: the context to make current, counters.
#include <cuda.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace {

constexpr size_t kArenaBytes = size_t(1) << 30;

struct Allocation {
    uintptr_t start;
    size_t size;  // as asked
    size_t span;  // page-rounded, what it occupies
    unsigned long long id;
    bool live;
    bool device;  // else pinned host memory
};

struct Stream {
    int magic = 0x57a3;
    bool blocking = true;  // orders after the legacy stream (flags 0)
};

// A pageable cuMemcpyHtoD not landed yet (see the top).
struct PendingCopy {
    uintptr_t dev;
    std::vector<char> bytes;
};
// An event recorded answers cuEventQuery with CUDA_ERROR_NOT_READY the
// first time it is polled after each record, as work still in flight on a
// real device would, so that the engine's "not yet" paths run here too.
struct Event {
    int magic = 0xe7e7;
    std::atomic<int> pending{0};
};

int g_ctx_object;
CUcontext ctx() { return reinterpret_cast<CUcontext>(&g_ctx_object); }

std::mutex g_mu;
char *g_arena = nullptr;
size_t g_arena_used = 0;
std::vector<Allocation> g_allocs;
unsigned long long g_next_id = 1;
std::vector<PendingCopy> g_pending;
std::atomic<unsigned long long> g_async_copies{0}, g_live_objects{0}, g_not_ready{0};
thread_local std::vector<CUcontext> t_stack;

size_t page() { return size_t(sysconf(_SC_PAGESIZE)); }

bool arena_ready() {
    if (g_arena) return true;
    void *p = mmap(nullptr, kArenaBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    g_arena = static_cast<char *>(p);
    return true;
}

bool has_context() { return !t_stack.empty(); }

// The live allocation holding p (nullptr: none).  Under g_mu.
Allocation *find(uintptr_t p) {
    for (Allocation &a : g_allocs)
        if (a.live && p >= a.start && p < a.start + a.size) return &a;
    return nullptr;
}

// [p, p + n) inside one live allocation of the given kind.  Under g_mu.
bool inside(uintptr_t p, size_t n, bool device) {
    Allocation *a = find(p);
    return a && a->device == device && n <= a->start + a->size - p;
}

// Copies with the arena's pages open for exactly the duration.  Under g_mu.
void arena_copy(void *dst, const void *src, size_t n, uintptr_t dev) {
    const uintptr_t lo = dev & ~(page() - 1), hi = (dev + n + page() - 1) & ~(page() - 1);
    mprotect(reinterpret_cast<void *>(lo), hi - lo, PROT_READ | PROT_WRITE);
    memcpy(dst, src, n);
    mprotect(reinterpret_cast<void *>(lo), hi - lo, PROT_NONE);
}

// The legacy stream's copies land.  Under g_mu.
void land_pending() {
    for (PendingCopy &c : g_pending)
        arena_copy(reinterpret_cast<void *>(c.dev), c.bytes.data(), c.bytes.size(), c.dev);
    g_pending.clear();
}

// Work on stream s (nullptr: the legacy stream itself) is ordered after
// the legacy stream's unless s is non-blocking.  Under g_mu.
void order_after_legacy(CUstream s) {
    if (!s || reinterpret_cast<Stream *>(s)->blocking) land_pending();
}

// s: the stream of an asynchronous copy, nullptr for a synchronous one.
CUresult copy(void *dst, const void *src, size_t n, bool to_device, CUstream s) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard<std::mutex> lk(g_mu);
    const uintptr_t dev = to_device ? uintptr_t(dst) : uintptr_t(src);
    const uintptr_t host = to_device ? uintptr_t(src) : uintptr_t(dst);
    if (!inside(dev, n, true)) return CUDA_ERROR_INVALID_VALUE;
    const bool pinned = inside(host, n, false);
    if (s && !pinned) return CUDA_ERROR_INVALID_VALUE;
    if (s) g_async_copies.fetch_add(1);
    order_after_legacy(s);
    if (!s && to_device && !pinned) {
        const char *from = static_cast<const char *>(src);
        g_pending.push_back(PendingCopy{dev, std::vector<char>(from, from + n)});
        return CUDA_SUCCESS;
    }
    arena_copy(dst, src, n, dev);
    return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUcontext fake_cuda_context(void) { return ctx(); }
unsigned long long fake_cuda_async_copies(void) { return g_async_copies.load(); }
// cuEventQuery calls answered CUDA_ERROR_NOT_READY.
unsigned long long fake_cuda_not_ready_answers(void) { return g_not_ready.load(); }
// Streams, events and pinned buffers not yet released.
unsigned long long fake_cuda_live_objects(void) { return g_live_objects.load(); }

CUresult cuDriverGetVersion(int *v) {
    *v = 12040;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult rc, const char **s) {
    switch (rc) {
    case CUDA_SUCCESS: *s = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument (fake driver)"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory (fake driver)"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *s = "invalid device context (fake driver: none current)"; break;
    default: *s = "error (fake driver)"; break;
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext c) {
    if (c != ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    t_stack.push_back(c);
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *c) {
    if (t_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
    if (c) *c = t_stack.back();
    t_stack.pop_back();
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!arena_ready()) return CUDA_ERROR_OUT_OF_MEMORY;
    const size_t span = (bytes + page() - 1) & ~(page() - 1);
    // First fit among freed spans, so that addresses are reused (with a
    // new buffer id), as a real allocator does.
    for (Allocation &a : g_allocs)
        if (!a.live && a.device && a.span >= span) {
            a.live = true;
            a.size = bytes;
            a.id = g_next_id++;
            *p = a.start;
            return CUDA_SUCCESS;
        }
    if (g_arena_used + span > kArenaBytes) return CUDA_ERROR_OUT_OF_MEMORY;
    Allocation a{uintptr_t(g_arena + g_arena_used), bytes, span, g_next_id++, true, true};
    g_arena_used += span;
    g_allocs.push_back(a);
    *p = a.start;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    std::lock_guard<std::mutex> lk(g_mu);
    Allocation *a = find(uintptr_t(p));
    if (!a || !a->device || a->start != uintptr_t(p)) return CUDA_ERROR_INVALID_VALUE;
    land_pending();  // cuMemFree waits for the device
    a->live = false;
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    const size_t span = (bytes + page() - 1) & ~(page() - 1);
    void *m = aligned_alloc(page(), span ? span : page());
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    std::lock_guard<std::mutex> lk(g_mu);
    g_allocs.push_back(Allocation{uintptr_t(m), bytes, span, g_next_id++, true, false});
    g_live_objects.fetch_add(1);
    *p = m;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard<std::mutex> lk(g_mu);
    Allocation *a = find(uintptr_t(p));
    if (!a || a->device || a->start != uintptr_t(p)) return CUDA_ERROR_INVALID_VALUE;
    // Host allocations are never reused by address here: dropped.
    g_allocs.erase(g_allocs.begin() + (a - g_allocs.data()));
    free(p);
    g_live_objects.fetch_sub(1);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    return copy(reinterpret_cast<void *>(dst), src, n, true, nullptr);
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    return copy(dst, reinterpret_cast<const void *>(src), n, false, nullptr);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    return copy(reinterpret_cast<void *>(dst), src, n, true, s);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    return copy(dst, reinterpret_cast<const void *>(src), n, false, s);
}

// Device to device, in the caller like the other asynchronous copies.
// Overlapping ranges are refused: the real driver does not promise what
// such a copy leaves, so terse must never ask for one.
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!inside(uintptr_t(dst), n, true) || !inside(uintptr_t(src), n, true)) return CUDA_ERROR_INVALID_VALUE;
    if (dst < src + n && src < dst + n) return CUDA_ERROR_INVALID_VALUE;
    g_async_copies.fetch_add(1);
    order_after_legacy(s);
    const uintptr_t lo = std::min(dst, src) & ~(page() - 1);
    const uintptr_t hi = (std::max(dst, src) + n + page() - 1) & ~(page() - 1);
    mprotect(reinterpret_cast<void *>(lo), hi - lo, PROT_READ | PROT_WRITE);
    memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), n);
    mprotect(reinterpret_cast<void *>(lo), hi - lo, PROT_NONE);
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    if (flags & ~unsigned(CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    Stream *st = new Stream;
    st->blocking = !(flags & CU_STREAM_NON_BLOCKING);
    *s = reinterpret_cast<CUstream>(st);
    g_live_objects.fetch_add(1);
    return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(CUstream s) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    delete reinterpret_cast<Stream *>(s);
    g_live_objects.fetch_sub(1);
    return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream s) {
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> lk(g_mu);
    order_after_legacy(s);
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned int) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    *e = reinterpret_cast<CUevent>(new Event);
    g_live_objects.fetch_add(1);
    return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent e) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    delete reinterpret_cast<Event *>(e);
    g_live_objects.fetch_sub(1);
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream s) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    if (!e || !s) return CUDA_ERROR_INVALID_HANDLE;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        order_after_legacy(s);
    }
    reinterpret_cast<Event *>(e)->pending.store(1);
    return CUDA_SUCCESS;
}
CUresult cuEventQuery(CUevent e) {
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    if (reinterpret_cast<Event *>(e)->pending.exchange(0) == 0) return CUDA_SUCCESS;
    g_not_ready.fetch_add(1);
    return CUDA_ERROR_NOT_READY;
}
// Work runs at once in the caller here, so the wait is already over; the
// handles are still checked, as the real driver does.
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int) {
    if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
    if (!e || !s) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> lk(g_mu);
    order_after_legacy(s);
    return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent e) { return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }

// Like the real driver's plural query: values of a pointer no allocation
// holds are left zero and the call succeeds.
CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr p) {
    std::lock_guard<std::mutex> lk(g_mu);
    const Allocation *a = find(uintptr_t(p));
    for (unsigned int i = 0; i < n; ++i) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *static_cast<unsigned int *>(data[i]) = !a          ? 0
                                                    : a->device ? CU_MEMORYTYPE_DEVICE
                                                                : CU_MEMORYTYPE_HOST;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<int *>(data[i]) = 0; break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long *>(data[i]) = a ? a->id : 0; break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *static_cast<CUdeviceptr *>(data[i]) = a ? CUdeviceptr(a->start) : 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t *>(data[i]) = a ? a->size : 0; break;
        case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext *>(data[i]) = a ? ctx() : nullptr; break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

}  // extern "C"
