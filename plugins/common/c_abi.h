// The C-ABI callbacks that only carry a codec's C++ Params and Instance
// across the void * boundary, written once so that every plugin copies its
// parameters and stops exceptions at the boundary the same way.
//
// The codec's own functions (parse_params, params_string and, for
// set_instance_callbacks, create_instance, encode, ...) are found by
// argument-dependent lookup in the namespace of its Params / Instance types.
// Hidden visibility: a module that includes this exports its entry point
// only, whatever flags it is built with.
#pragma once

#include "isa.h"
#include "params.h"

#include <terse/codec.h>

#include <cstddef>
#include <new>

#pragma GCC visibility push(hidden)

namespace terse_codec {

template <typename Params>
int parse_callback(const terse_codec_kv_t *kv, size_t nkv, void **params, char *err, size_t errlen) {
    *params = nullptr;
    try {
        Params p;
        const int rc = parse_params(kv, nkv, &p, err, errlen);
        if (rc != TERSE_CODEC_OK) return rc;
        *params = new Params(p);
        return TERSE_CODEC_OK;
    } catch (const std::bad_alloc &) {
        return TERSE_CODEC_ERR_NOMEM;
    } catch (...) {
        set_message(err, errlen, "%s", "internal error while parsing parameters");
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

template <typename Params>
void free_params_callback(void *params) {
    delete static_cast<Params *>(params);
}

template <typename Params>
size_t params_string_callback(const void *params, char *buf, size_t buflen) {
    try {
        return params_string(*static_cast<const Params *>(params), buf, buflen);
    } catch (...) {
        if (buf && buflen) buf[0] = '\0';
        return 0;
    }
}

template <typename Instance>
void destroy_callback(void *instance) {
    delete static_cast<Instance *>(instance);
}

// For codecs whose C++ functions take the instance by reference and choose
// their code path from an Isa (quantize, errbound): callbacks that forward
// to them, creating instances on the best code path this CPU runs.
template <typename Params, typename Instance>
int create_callback(const void *params, const terse_codec_setup_t *setup, void **instance, char *err,
                    size_t errlen) {
    Instance *inst = nullptr;
    const int rc = create_instance(*static_cast<const Params *>(params), setup, best_isa(), &inst, err, errlen);
    *instance = inst;
    return rc;
}

template <typename Instance>
void destroy_instance_callback(void *instance) {
    destroy_instance(static_cast<Instance *>(instance));
}

template <typename Instance>
size_t max_encoded_size_callback(void *instance, size_t count) {
    return max_encoded_size(*static_cast<Instance *>(instance), count);
}

template <typename Instance>
size_t stats_count_callback(void *instance, size_t count) {
    return stats_count(*static_cast<Instance *>(instance), count);
}

template <typename Instance>
int stats_callback(void *instance, const void *src, size_t count, double *out, const terse_codec_call_t *) {
    return stats(*static_cast<Instance *>(instance), src, count, out);
}

template <typename Instance>
int encode_callback(void *instance, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                    const terse_codec_call_t *call) {
    try {
        return encode(*static_cast<Instance *>(instance), src, count, dst, dst_cap, dst_len, call);
    } catch (...) {
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

// stats, decode and combine are not wrapped: these codecs throw nothing
// there (scratch growth reports NOMEM itself).
template <typename Instance>
int decode_callback(void *instance, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                    terse_op_t op, const terse_codec_call_t *) {
    return decode(*static_cast<Instance *>(instance), src, src_len, dst, count, accumulate, op);
}

template <typename Instance>
int combine_callback(void *instance, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
                     int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len,
                     const terse_codec_call_t *) {
    return combine(*static_cast<Instance *>(instance), a, a_len, a_contributors, b, b_len, b_contributors, count,
                   out, out_cap, out_len);
}

// Every callback of d, forwarding to such a codec.
template <typename Params, typename Instance>
void set_forwarding_callbacks(terse_codec_descriptor_t &d) {
    d.parse = parse_callback<Params>;
    d.free_params = free_params_callback<Params>;
    d.params_string = params_string_callback<Params>;
    d.create = create_callback<Params, Instance>;
    d.destroy = destroy_instance_callback<Instance>;
    d.max_encoded_size = max_encoded_size_callback<Instance>;
    d.stats_count = stats_count_callback<Instance>;
    d.stats = stats_callback<Instance>;
    d.encode = encode_callback<Instance>;
    d.decode = decode_callback<Instance>;
    d.combine = combine_callback<Instance>;
}

}  // namespace terse_codec

#pragma GCC visibility pop
