// create() for codecs that run a per-dtype kernel table on host memory
// (quantize, errbound): the checks they make first and the Instance they
// fill last, written once so both report the same setup problems alike.
// The codec's own checks (ranks, widths) go between the two.
#pragma once

#include "elem.h"
#include "isa.h"
#include "params.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace terse_codec {

// The setup struct is as new as this plugin, the dtype has a kernel table
// (*dindex: its index), the memory is one of mem_kinds (host, or also cuda
// for a codec built with its device kernels).
inline int check_setup(const terse_codec_setup_t *setup, uint32_t mem_kinds, int *dindex, char *err,
                       size_t errlen) {
    if (!setup || setup->struct_size < sizeof(terse_codec_setup_t)) {
        set_message(err, errlen, "setup struct_size %u, expected %zu", setup ? setup->struct_size : 0u,
                    sizeof(terse_codec_setup_t));
        return TERSE_CODEC_ERR_PARAM;
    }
    const int di = dtype_index(setup->dtype);
    if (di < 0) {
        set_message(err, errlen, "dtype %d is not supported (accepted: float32, float64, float16, bfloat16)",
                    static_cast<int>(setup->dtype));
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    if (!(static_cast<uint32_t>(setup->mem_kind) & mem_kinds) ||
        (setup->mem_kind != TERSE_MEM_HOST && setup->mem_kind != TERSE_MEM_CUDA)) {
        set_message(err, errlen, "memory kind %u is not supported (accepted: host%s)",
                    static_cast<unsigned>(setup->mem_kind), (mem_kinds & TERSE_MEM_CUDA) ? ", cuda" : "");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    *dindex = di;
    return TERSE_CODEC_OK;
}

inline int check_host_setup(const terse_codec_setup_t *setup, int *dindex, char *err, size_t errlen) {
    return check_setup(setup, TERSE_MEM_HOST, dindex, err, errlen);
}

// The code path must run on this CPU; then a new Instance (fields p, dtype,
// dindex, elem_bytes, nranks, isa, k) runs the kernels kernels_for(isa).
template <typename Instance, typename Params, typename Kernels>
int new_kernel_instance(const Params &p, const terse_codec_setup_t *setup, int dindex, Isa isa,
                        const Kernels &(*kernels_for)(Isa), Instance **out, char *err, size_t errlen) {
    if (!isa_available(isa)) {
        set_message(err, errlen, "code path %s is not available on this CPU", isa_name(isa));
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    auto *inst = new (std::nothrow) Instance;
    if (!inst) return TERSE_CODEC_ERR_NOMEM;
    inst->p = p;
    inst->dtype = setup->dtype;
    inst->dindex = dindex;
    inst->elem_bytes = dtype_bytes(setup->dtype);
    inst->nranks = setup->nranks;
    inst->isa = isa;
    inst->k = &kernels_for(isa);
    *out = inst;
    return TERSE_CODEC_OK;
}

}  // namespace terse_codec
