/* Ranks whose configuration of a communicator differs must all get an
 * error that names the difference, never a hang or a silent mix.  The
 * launcher script gives rank 0 a different TERSE_MIN_BYTES (4096 against
 * 8192): below the lower one (the job's floor) every rank passes the call
 * to the MPI library, which gives the exact result; from the floor on, in
 * between the two values as above both, every rank fails.  Also checks
 * MPI_Info hints: a bad hint is refused at MPI_Comm_set_info, a good one
 * takes effect, dup inherits and dup_with_info replaces. */
#include "mpi_check.h"

#include <terse/terse.h>

#include <stdlib.h>
#include <string.h>

enum { COUNT = 1 << 16 };

static void mismatch(void) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int size;
    MPI_Comm_size(c, &size);
    float *buf = calloc(COUNT, sizeof(float));
    /* 400 bytes: below both thresholds. */
    for (int i = 0; i < 100; ++i) buf[i] = 1.0f;
    CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, 100, MPI_FLOAT, MPI_SUM, c) == MPI_SUCCESS, "small allreduce failed");
    CHECK(buf[0] == (float)size && buf[99] == (float)size, "small allreduce: %f", buf[0]);
    /* 6000 bytes: rank 0 alone would take it; every rank must fail. */
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, 1500, MPI_FLOAT, MPI_SUM, c);
    CHECK(rc != MPI_SUCCESS, "allreduce between the disagreeing thresholds succeeded");
    CHECK(strstr(terse_last_error(), "disagree") && strstr(terse_last_error(), "min_bytes"), "message: %s",
          terse_last_error());
    rc = MPI_Allreduce(MPI_IN_PLACE, buf, COUNT, MPI_FLOAT, MPI_SUM, c);
    CHECK(rc != MPI_SUCCESS, "allreduce with disagreeing configuration succeeded");
    const char *msg = terse_last_error();
    CHECK(strstr(msg, "disagree") && strstr(msg, "min_bytes"), "message: %s", msg);
    /* The code itself explains the failure: terse registered its error
     * classes with the MPI library. */
    char text[MPI_MAX_ERROR_STRING];
    int len = 0, cls = 0;
    CHECK(MPI_Error_string(rc, text, &len) == MPI_SUCCESS, "MPI_Error_string(%d) failed", rc);
    CHECK(strcmp(text, "terse: ranks disagree on the configuration") == 0, "MPI_Error_string: %s", text);
    CHECK(MPI_Error_class(rc, &cls) == MPI_SUCCESS && cls != MPI_ERR_OTHER, "error class %d", cls);
    CHECK(MPI_Error_string(cls, text, &len) == MPI_SUCCESS &&
              strcmp(text, "terse: ranks disagree on the configuration") == 0,
          "MPI_Error_string of class %d: %s", cls, text);
    free(buf);
    MPI_Comm_free(&c);
}

static void hints(void) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Info bad, good;
    MPI_Info_create(&bad);
    MPI_Info_set(bad, "terse_pipeline_depth", "0");
    CHECK(MPI_Comm_set_info(c, bad) != MPI_SUCCESS, "bad hint accepted");
    CHECK(strstr(terse_last_error(), "pipeline_depth") && strstr(terse_last_error(), "'0'"), "message: %s",
          terse_last_error());
    MPI_Info_create(&good);
    MPI_Info_set(good, "terse_min_bytes", "1M");
    CHECK(MPI_Comm_set_info(c, good) == MPI_SUCCESS, "good hint refused: %s", terse_last_error());
    char cfg[512];
    CHECK(terse_comm_get_config(c, cfg, sizeof cfg) == TERSE_OK, "%s", terse_last_error());
    CHECK(strstr(cfg, "min_bytes=1048576"), "config: %s", cfg);

    float *buf = calloc(COUNT, sizeof(float));
    for (int i = 0; i < COUNT; ++i) buf[i] = 1;
    /* 256 KiB < 1 MiB: passed through. */
    CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, COUNT, MPI_FLOAT, MPI_SUM, c) == MPI_SUCCESS, "allreduce");
    terse_comm_stats_t st;
    terse_comm_stats(c, &st, sizeof st);
    CHECK(st.calls_passed == 1 && st.calls_intercepted == 0, "passed %llu intercepted %llu",
          (unsigned long long)st.calls_passed, (unsigned long long)st.calls_intercepted);

    /* A duplicate inherits the hint. */
    MPI_Comm d;
    MPI_Comm_dup(c, &d);
    CHECK(terse_comm_get_config(d, cfg, sizeof cfg) == TERSE_OK && strstr(cfg, "min_bytes=1048576"),
          "dup config: %s", cfg);
    /* terse_comm_configure overrides it. */
    CHECK(terse_comm_configure(d, "min_bytes", "0") == TERSE_OK, "%s", terse_last_error());
    CHECK(terse_comm_configure(d, "min_bytes", "-5") == TERSE_ERR_INVALID, "negative accepted");
    CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, COUNT, MPI_FLOAT, MPI_SUM, d) == MPI_SUCCESS, "allreduce");
    terse_comm_stats(d, &st, sizeof st);
    CHECK(st.calls_intercepted == 1, "intercepted %llu", (unsigned long long)st.calls_intercepted);
    CHECK(buf[7] == (float)(size * size), "value %f", buf[7]);

    /* dup_with_info replaces the hints. */
    MPI_Comm e;
    MPI_Info none;
    MPI_Info_create(&none);
    MPI_Info_set(none, "terse_enable", "off");
    CHECK(MPI_Comm_dup_with_info(c, none, &e) == MPI_SUCCESS, "dup_with_info");
    CHECK(terse_comm_get_config(e, cfg, sizeof cfg) == TERSE_OK && strstr(cfg, "enable=0") &&
              !strstr(cfg, "min_bytes=1048576"),
          "dup_with_info config: %s", cfg);
    MPI_Info_free(&none);
    MPI_Info_free(&bad);
    MPI_Info_free(&good);
    MPI_Comm_free(&e);
    MPI_Comm_free(&d);
    MPI_Comm_free(&c);
    free(buf);
    (void)rank;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "mismatch") == 0) mismatch();
    else hints();
    MPI_Finalize();
    return 0;
}
