// The engine's message tags: what names a message on the wire, built by
// the engine (op_tag, op_base.h) and matched whole by the transport, which
// knows nothing of their fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace terse {

// Tag layout (64 bits): [context id 20][source comm rank 20][op seq 8][slot 16].
// Messages with equal tags from one sender are matched in posting order, so
// slot may wrap.
constexpr uint64_t make_tag(uint32_t ctx_id, uint32_t src_rank, uint32_t seq, uint32_t slot) {
    return (uint64_t(ctx_id & 0xFFFFFu) << 44) | (uint64_t(src_rank & 0xFFFFFu) << 24) |
           (uint64_t(seq & 0xFFu) << 16) | uint64_t(slot & 0xFFFFu);
}

// A tag's fields as text for messages ("context 3, source rank 1, op seq 0,
// slot 7"); the runtime hands this to the transport for its errors.
inline void describe_tag(uint64_t tag, char *buf, size_t len) {
    std::snprintf(buf, len, "context %u, source rank %u, op seq %u, slot %u", unsigned(tag >> 44) & 0xFFFFFu,
                  unsigned(tag >> 24) & 0xFFFFFu, unsigned(tag >> 16) & 0xFFu, unsigned(tag) & 0xFFFFu);
}

}  // namespace terse
