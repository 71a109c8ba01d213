// Deterministic inputs for the lossy codec tests (quantize, errbound):
// gradient-like heavy-tailed data, smooth fields, edge magnitudes, and the
// real sample fields in ../shared/data.  Every generator is a pure function
// of its seed, so a failure reproduces exactly.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace codec_test {

// splitmix64: tiny, seedable, and the same on every platform (unlike the
// <random> distributions).
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) {}
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }               // [0, 1)
    double open_uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1p-53; }  // (0, 1)
    double normal() {
        const double u1 = open_uniform(), u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    double laplace(double b) {
        const double u = open_uniform() - 0.5;
        return (u < 0 ? b : -b) * std::log(1.0 - 2.0 * std::fabs(u));
    }
    // Student-t with nu degrees of freedom (normal / sqrt(chi2/nu), chi2 as a sum of squares).
    double student_t(int nu) {
        double chi2 = 0;
        for (int i = 0; i < nu; i++) {
            const double z = normal();
            chi2 += z * z;
        }
        return normal() / std::sqrt(chi2 / nu);
    }
};

enum class Shape { Gaussian, Laplace, StudentT, Smooth, Constant, Zero, Tiny, Huge, Denormal, Mixed };

inline const char *shape_name(Shape s) {
    switch (s) {
    case Shape::Gaussian: return "gaussian";
    case Shape::Laplace: return "laplace";
    case Shape::StudentT: return "student_t3";
    case Shape::Smooth: return "smooth";
    case Shape::Constant: return "constant";
    case Shape::Zero: return "zero";
    case Shape::Tiny: return "tiny";
    case Shape::Huge: return "huge";
    case Shape::Denormal: return "denormal";
    case Shape::Mixed: return "mixed";
    }
    return "?";
}

constexpr Shape kAllShapes[] = {Shape::Gaussian, Shape::Laplace, Shape::StudentT, Shape::Smooth,
                                Shape::Constant, Shape::Zero,    Shape::Tiny,     Shape::Huge,
                                Shape::Denormal, Shape::Mixed};

// n values of the shape as doubles; `rank` varies the data like different ranks would.
inline std::vector<double> make_shape(Shape s, size_t n, uint64_t seed, int rank = 0) {
    Rng r(seed * 7919 + static_cast<uint64_t>(rank) * 104729 + static_cast<uint64_t>(s));
    std::vector<double> v(n);
    for (size_t i = 0; i < n; i++) {
        const double t = static_cast<double>(i);
        switch (s) {
        case Shape::Gaussian: v[i] = 0.01 * r.normal(); break;
        case Shape::Laplace: v[i] = r.laplace(1e-3); break;
        case Shape::StudentT: v[i] = 1e-3 * r.student_t(3); break;
        case Shape::Smooth: v[i] = 3.0 * std::sin(t * 0.001 + rank) + 0.5 * std::cos(t * 0.037) + 20.0; break;
        case Shape::Constant: v[i] = 1.25 + rank; break;
        case Shape::Zero: v[i] = 0.0; break;
        case Shape::Tiny: v[i] = 1e-38 * r.normal(); break;
        case Shape::Huge: v[i] = 1e30 * r.normal(); break;
        case Shape::Denormal: v[i] = 1e-42 * r.normal(); break;
        case Shape::Mixed:  // magnitudes over many decades, some exact zeros, within float16 range
            v[i] = (i % 17 == 0) ? 0.0 : r.normal() * std::pow(10.0, static_cast<int>(r.next() % 10) - 6);
            break;
        }
    }
    return v;
}

// The sample fields (raw little-endian float32); empty if the file is missing.
inline std::string shared_data_dir() {
    if (const char *d = std::getenv("TERSE_SHARED_DATA")) return d;
    return "../shared/data";
}

inline std::vector<float> load_field(const std::string &file) {
    const std::string path = shared_data_dir() + "/" + file;
    std::vector<float> v;
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return v;
    std::fseek(f, 0, SEEK_END);
    const long len = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    if (len > 0) {
        v.resize(static_cast<size_t>(len) / sizeof(float));
        if (std::fread(v.data(), sizeof(float), v.size(), f) != v.size()) v.clear();
    }
    std::fclose(f);
    return v;
}

constexpr const char *kFields[] = {"ecg_108000_f32.raw", "ascent_512x512_f32.raw",
                                   "sz3_testfloat_8x8x128_f32.raw"};

}  // namespace codec_test
