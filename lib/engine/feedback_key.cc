#include "engine/feedback_key.h"

#include <new>

namespace terse {

uint64_t feedback_shape(CollKind kind, terse_dtype_t dtype, size_t count) {
    constexpr uint64_t kCountMask = (uint64_t(1) << 48) - 1;
    const uint64_t c = uint64_t(count);
    return uint64_t(kind) << 56 | (uint64_t(dtype) & 0xff) << 48 | ((c & kCountMask) ^ (c >> 48));
}

FeedbackKey FeedbackKeyer::next(FeedbackKeyMode mode, CollKind kind, terse_dtype_t dtype, size_t count) {
    FeedbackKey k;
    k.mode = mode;
    const bool tagged = tag_set_;
    tag_set_ = false;
    switch (mode) {
    case FeedbackKeyMode::Address: break;  // the operation knows the address
    case FeedbackKeyMode::Tag:
        k.keyed = tagged;
        k.id = tag_;
        break;
    case FeedbackKeyMode::Sequence: {
        k.shape = feedback_shape(kind, dtype, count);
        auto it = ordinals_.begin();
        while (it != ordinals_.end() && it->first != k.shape) ++it;
        if (it == ordinals_.end()) {
            try {
                it = ordinals_.insert(it, {k.shape, 0});
            } catch (const std::bad_alloc &) {
                // Out of memory: this call runs without feedback (and
                // its shape's ordinals may shift until the next step).
                k.keyed = false;
                return k;
            }
        }
        k.id = it->second++;
        break;
    }
    }
    return k;
}

}  // namespace terse
