/*
 * Helpers shared by the perf/ benchmarks (plain C, header-only so that each
 * benchmark stays one translation unit and links with nothing but MPI):
 * size and count parsing for the OSU-style options, and the deterministic
 * generator and gradient-like data every benchmark fills its buffers with.
 */
#ifndef TERSE_PERF_BENCH_UTIL_H
#define TERSE_PERF_BENCH_UTIL_H

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* "64M" -> 67108864.  Returns 0 on a malformed value. */
static inline int bench_parse_size(const char *s, size_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno) return 0;
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1ULL << 10, end++;
    else if (*end == 'm' || *end == 'M') mul = 1ULL << 20, end++;
    else if (*end == 'g' || *end == 'G') mul = 1ULL << 30, end++;
    if (*end == 'i' || *end == 'I') end++; /* "KiB" style */
    if (*end == 'b' || *end == 'B') end++;
    if (*end != '\0') return 0;
    *out = (size_t)(v * mul);
    return 1;
}

/* A count in 0 .. 1e8.  Returns 0 on a malformed value. */
static inline int bench_parse_int(const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < 0 || v > 100000000) return 0;
    *out = (int)v;
    return 1;
}

/* splitmix64 seeds xoshiro256**: a fast generator with a fixed, portable
 * sequence, so every run sees the same data. */
typedef struct rng {
    uint64_t s[4];
} rng_t;
static inline uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static inline void rng_seed(rng_t *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t rng_next(rng_t *r) {
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}
/* Uniform in (0, 1), never 0 so logs are finite. */
static inline double rng_unit(rng_t *r) { return ((rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

/* Gradients of a network differ in scale from layer to layer by orders of
 * magnitude and are Laplace-like (most values tiny, a few large) inside a
 * layer; "layers" here are blocks of 64 Ki elements. */
#define BENCH_LAYER_ELEMS 65536
static inline void fill_laplace(double *x, size_t n, rng_t *r) {
    double b = 1e-3;
    for (size_t i = 0; i < n; i++) {
        if (i % BENCH_LAYER_ELEMS == 0) b = pow(10.0, -4.0 + 2.0 * rng_unit(r)); /* 1e-4 .. 1e-2 */
        double u = rng_unit(r) - 0.5;
        x[i] = (u < 0 ? 1 : -1) * b * log(1.0 - 2.0 * fabs(u));
    }
}

/* The same data rounded to float, for buffers sent as MPI_FLOAT; filled a
 * "layer" at a time, which draws the same sequence as fill_laplace().
 * Returns 0 when out of memory. */
static inline int fill_laplace_float(float *x, size_t n, rng_t *r) {
    double *tmp = (double *)malloc(BENCH_LAYER_ELEMS * sizeof(double));
    if (!tmp) return 0;
    for (size_t off = 0; off < n; off += BENCH_LAYER_ELEMS) {
        size_t m = n - off < BENCH_LAYER_ELEMS ? n - off : BENCH_LAYER_ELEMS;
        fill_laplace(tmp, m, r);
        for (size_t i = 0; i < m; i++) x[off + i] = (float)tmp[i];
    }
    free(tmp);
    return 1;
}

#endif
