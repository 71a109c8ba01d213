// A codec as terse-eval drives it: loaded through the registry exactly as
// the library loads it (TERSE_PLUGIN_PATH, then the install directory), with
// the same setup, and called chunk by chunk through its descriptor.
#pragma once

#include "codec/registry.h"

#include <terse/codec.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace terse::eval {

// One encoded chunk as the engine would send it: either the codec's payload
// or, when encode() answered TERSE_CODEC_RAW, the elements themselves.
struct Payload {
    bool raw = false;
    int contributors = 1;
    std::vector<unsigned char> bytes;
};

class Codec {
public:
    // spec is the codec grammar ("quantize:bits=8"); throws EvalError when
    // the grammar, the codec name or a parameter is refused.
    explicit Codec(const std::string &spec);

    const std::string &label() const { return label_; }
    const terse_codec_descriptor_t *desc() const { return plugin_->desc; }
    bool supports(terse_dtype_t dt) const { return desc()->dtypes & TERSE_DTYPE_BIT(dt); }
    bool lossless() const { return desc()->flags & TERSE_CODEC_FLAG_LOSSLESS; }
    terse_reduce_mode_t mode() const { return desc()->mode; }

    // An instance for this setup (made once, then reused).
    CodecInstance &instance(terse_dtype_t dt, int nranks, size_t max_chunk_count);

private:
    std::string label_;
    const CodecPlugin *plugin_ = nullptr;
    std::unique_ptr<CodecParams> params_;
    std::map<std::tuple<int, int, size_t>, std::unique_ptr<CodecInstance>> instances_;
};

// SUMMABLE codecs: this chunk's local statistics.
std::vector<double> chunk_stats(CodecInstance &ci, const void *src, size_t n, uint64_t seed);

// Encode n elements (agreed: SUMMABLE statistics, else nullptr) into at
// most cap bytes (0: the codec's max_encoded_size).  Adds the time spent to
// *seconds when given.
Payload encode_chunk(CodecInstance &ci, const void *src, size_t n, const double *agreed, uint64_t seed,
                     double *seconds = nullptr, size_t cap = 0);

// dst = decoded (accumulate false) or dst = dst op decoded.
void decode_chunk(CodecInstance &ci, const Payload &p, void *dst, size_t n, bool accumulate, terse_op_t op,
                  const double *agreed, uint64_t seed, double *seconds = nullptr);

// SUMMABLE: *out = a + b in the code domain; false when the codec answers
// TERSE_CODEC_RAW (the caller then adds the elements).
bool combine_chunks(CodecInstance &ci, const Payload &a, const Payload &b, size_t n, const double *agreed,
                    uint64_t seed, Payload *out, size_t cap = 0);

// Name of a codec status code, for messages.
const char *codec_status_name(int rc);

}  // namespace terse::eval
