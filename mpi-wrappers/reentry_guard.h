// Thread-local re-entry guard: while terse is inside an intercepted call on
// this thread, any MPI call that reaches a wrapper again (from a library
// terse uses, or from terse itself by mistake) goes straight to PMPI.
// Thread-local so that two threads in two collectives never serialise;
// initial-exec TLS so that reading it is one load, not a call to
// __tls_get_addr (libterse is loaded at start-up, by LD_PRELOAD or as a
// dependency, where static TLS is available).
#pragma once

namespace terse {

class ReentryGuard {
public:
    ReentryGuard() { depth_++; }
    ~ReentryGuard() { depth_--; }
    ReentryGuard(const ReentryGuard &) = delete;
    ReentryGuard &operator=(const ReentryGuard &) = delete;
    static bool active() { return depth_ > 0; }

private:
    static inline thread_local int depth_ __attribute__((tls_model("initial-exec"))) = 0;
};

}  // namespace terse
