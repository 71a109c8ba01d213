// The completion calls (MPI_Wait, MPI_Test, their all/any/some forms),
// MPI_Request_get_status and MPI_Request_free.  terse's requests are generalized requests that
// complete only when terse completes them (runtime/nonblocking.h); while
// any is outstanding, these calls drive terse's operations as well as the
// MPI library's, testing the application's requests between passes
// instead of blocking in PMPI, so that terse and MPI requests mixed in one
// array complete in any order.  With none outstanding they are the PMPI
// calls and nothing else.
#include "dispatch.h"
#include "reentry_guard.h"

using namespace terse;

namespace {

// Blocks the way wait() does: test(&flag) until flag, driving terse between
// tests; once no terse request is left, block() (the PMPI wait) finishes.
template <class Test, class Block>
int wait_loop(Test &&test, Block &&block) {
    ReentryGuard guard;
    NbBackoff backoff;
    for (;;) {
        nb_poll();
        if (!nb_pending()) return block();
        int flag = 0;
        int rc = test(&flag);
        if (rc != MPI_SUCCESS || flag) return rc;
        backoff.idle();
    }
}

bool driving() { return nb_pending() && !ReentryGuard::active(); }

// One pass over terse's operations before a test.
void poll_once() {
    ReentryGuard guard;
    nb_poll();
}

}  // namespace

extern "C" int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    if (!driving()) return PMPI_Wait(request, status);
    return wait_loop([&](int *flag) { return PMPI_Test(request, flag, status); },
                     [&] { return PMPI_Wait(request, status); });
}

extern "C" int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    if (driving()) poll_once();
    return PMPI_Test(request, flag, status);
}

extern "C" int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
    if (!driving()) return PMPI_Waitall(count, requests, statuses);
    return wait_loop([&](int *flag) { return PMPI_Testall(count, requests, flag, statuses); },
                     [&] { return PMPI_Waitall(count, requests, statuses); });
}

extern "C" int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    if (driving()) poll_once();
    return PMPI_Testall(count, requests, flag, statuses);
}

extern "C" int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
    if (!driving()) return PMPI_Waitany(count, requests, index, status);
    return wait_loop([&](int *flag) { return PMPI_Testany(count, requests, index, flag, status); },
                     [&] { return PMPI_Waitany(count, requests, index, status); });
}

extern "C" int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
    if (driving()) poll_once();
    return PMPI_Testany(count, requests, index, flag, status);
}

extern "C" int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[]) {
    if (!driving()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    return wait_loop(
        [&](int *flag) {
            int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
            *flag = *outcount != 0;  // MPI_UNDEFINED (nothing active) ends the wait too
            return rc;
        },
        [&] { return PMPI_Waitsome(incount, requests, outcount, indices, statuses); });
}

extern "C" int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[]) {
    if (driving()) poll_once();
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

// Polls like MPI_Test: an application that watches a request with it (it
// neither frees nor deallocates the request) must see terse's operation
// finish without a progress thread.
extern "C" int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
    if (driving()) poll_once();
    return PMPI_Request_get_status(request, flag, status);
}

// An active terse request the application frees completes in the
// background: MPI keeps it until terse completes it (its free function
// then releases terse's part).
extern "C" int MPI_Request_free(MPI_Request *request) {
    if (driving()) poll_once();
    return PMPI_Request_free(request);
}
