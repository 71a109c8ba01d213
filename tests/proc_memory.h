/* The calling process's memory as the kernel sees it, for the tests that
 * hold memory flat (Linux /proc and getrusage). */
#ifndef TERSE_TESTS_PROC_MEMORY_H
#define TERSE_TESTS_PROC_MEMORY_H

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* Resident set in KiB, -1 when /proc is not there. */
static inline long rss_kib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Minor page faults so far: pages mapped in on first touch. */
static inline long minor_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

#endif
