// Which SIMD code path a codec instance runs.  Chosen once at create() from
// what the CPU (and the OS, for AVX-512 state) supports, so one build runs on
// any x86-64.  Every path produces the same bits; tests force each one.
#pragma once

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace terse_codec {

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

inline const char *isa_name(Isa isa) {
    switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "scalar";
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// F16C from CPUID leaf 1 (clang's __builtin_cpu_supports does not know it);
// the OS support for the YMM state it needs is part of the "avx2" check.
inline bool cpu_has_f16c() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    return (c & bit_F16C) != 0;
}
#endif

// True if this CPU can run isa's code path.
inline bool isa_available(Isa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && cpu_has_f16c();
    case Isa::Avx512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
               isa_available(Isa::Avx2);
    }
    return false;
#else
    return isa == Isa::Scalar;
#endif
}

inline Isa best_isa() {
    if (isa_available(Isa::Avx512)) return Isa::Avx512;
    if (isa_available(Isa::Avx2)) return Isa::Avx2;
    return Isa::Scalar;
}

}  // namespace terse_codec
