// Deterministic test inputs of the shapes codecs meet: heavy-tailed
// gradient-like values (mostly small, a few large), smooth fields, constant,
// all zero, tiny / huge magnitudes, denormals.  Every generator is a pure
// function of its arguments (fixed-seed splitmix64), so failures reproduce.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace input_shapes {

struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
    double normal() {
        double u = uniform();
        if (u < 1e-300) u = 1e-300;
        return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * uniform());
    }
};

// Gradient-like: Gaussian body with a per-block log-normal scale (layers of
// very different magnitude) and rare large outliers.
inline std::vector<double> gradient(size_t n, uint64_t seed = 1) {
    Rng r(seed);
    std::vector<double> v(n);
    double scale = 1e-3;
    for (size_t i = 0; i < n; i++) {
        if (i % 4096 == 0) scale = 1e-3 * std::exp(1.5 * r.normal());
        double x = r.normal() * scale;
        if (r.uniform() < 0.001) x *= 50.0;
        v[i] = x;
    }
    return v;
}

// Smooth field: sum of a few sines plus a slow trend.
inline std::vector<double> smooth(size_t n, uint64_t seed = 2) {
    Rng r(seed);
    const double a = 1.0 + r.uniform(), b = 0.3 * r.uniform(), p = r.uniform() * 6.28;
    std::vector<double> v(n);
    for (size_t i = 0; i < n; i++) {
        const double t = double(i) / 1000.0;
        v[i] = a * std::sin(t + p) + b * std::sin(7.3 * t) + 0.01 * t;
    }
    return v;
}

inline std::vector<double> constant(size_t n, double c = 0.75) { return std::vector<double>(n, c); }

inline std::vector<double> zeros(size_t n) { return std::vector<double>(n, 0.0); }

// Gradient shape scaled to the given magnitude (1e-30: tiny, 1e30: huge).
inline std::vector<double> scaled(size_t n, double magnitude, uint64_t seed = 3) {
    auto v = gradient(n, seed);
    for (auto &x : v) x *= magnitude * 1e3;
    return v;
}

// float32 denormals (and zeros) mixed with a few normal values.
inline std::vector<double> denormals_f32(size_t n, uint64_t seed = 4) {
    Rng r(seed);
    std::vector<double> v(n);
    for (size_t i = 0; i < n; i++) {
        const double d = std::ldexp(double(r.next() % (1u << 23)), -149);  // float denormal range
        v[i] = (r.next() & 1) ? d : -d;
        if (r.uniform() < 0.01) v[i] = r.normal();
    }
    return v;
}

// Named shapes for parameterised tests (denormals suit float32 only).
inline std::vector<std::string> shape_names() {
    return {"gradient", "smooth", "constant", "zeros", "tiny", "huge", "denormal"};
}

inline std::vector<double> make(const std::string &shape, size_t n, uint64_t seed = 1) {
    if (shape == "gradient") return gradient(n, seed);
    if (shape == "smooth") return smooth(n, seed);
    if (shape == "constant") return constant(n);
    if (shape == "zeros") return zeros(n);
    if (shape == "tiny") return scaled(n, 1e-30, seed);
    if (shape == "huge") return scaled(n, 1e30, seed);
    if (shape == "denormal") return denormals_f32(n, seed);
    return {};
}

template <typename T>
std::vector<T> as(const std::vector<double> &v) {
    return std::vector<T>(v.begin(), v.end());
}

}  // namespace input_shapes
