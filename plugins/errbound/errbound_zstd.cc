#include "errbound_codec.h"
#include "errbound_zstd.h"

#include <new>
#include <vector>

#ifdef TERSE_HAVE_ZSTD
#include <zstd.h>
#endif

namespace terse_errbound {

namespace {

struct ThreadState {
    std::vector<uint8_t> buf[3];
#ifdef TERSE_HAVE_ZSTD
    ZSTD_CCtx *cctx = nullptr;
    ZSTD_DCtx *dctx = nullptr;
    ~ThreadState() {
        ZSTD_freeCCtx(cctx);
        ZSTD_freeDCtx(dctx);
    }
#endif
};

ThreadState &state() {
    thread_local ThreadState s;
    return s;
}

}  // namespace

bool zstd_available() {
#ifdef TERSE_HAVE_ZSTD
    return true;
#else
    return false;
#endif
}

uint8_t *thread_scratch(int slot, size_t n) {
    std::vector<uint8_t> &b = state().buf[slot];
    if (b.size() < n) {
        try {
            b.resize(n);
        } catch (const std::bad_alloc &) {
            return nullptr;
        }
    }
    return b.data();
}

size_t zstd_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, int level) {
#ifdef TERSE_HAVE_ZSTD
    ThreadState &s = state();
    if (!s.cctx && !(s.cctx = ZSTD_createCCtx())) return 0;
    const size_t r = ZSTD_compressCCtx(s.cctx, dst, cap, src, n, level);
    return ZSTD_isError(r) ? 0 : r;
#else
    (void)src, (void)n, (void)dst, (void)cap, (void)level;
    return 0;
#endif
}

bool zstd_decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t expect) {
#ifdef TERSE_HAVE_ZSTD
    ThreadState &s = state();
    if (ZSTD_getFrameContentSize(src, n) != expect) return false;
    if (!s.dctx && !(s.dctx = ZSTD_createDCtx())) return false;
    const size_t r = ZSTD_decompressDCtx(s.dctx, dst, expect, src, n);
    return !ZSTD_isError(r) && r == expect;
#else
    (void)src, (void)n, (void)dst, (void)expect;
    return false;
#endif
}

}  // namespace terse_errbound
