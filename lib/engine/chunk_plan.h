// How a collective's data is cut: `nblocks` blocks (one per rank in the
// ring; one per contribution in gather), each block into chunks of at most
// `chunk` elements.  Everything here is a pure function of arguments that
// match on every rank, so both ends of every message agree on its size and
// position without exchanging it.  Empty blocks have no chunks: no message
// is sent for them by anyone.
#pragma once

#include <cstddef>
#include <memory_resource>
#include <vector>

namespace terse {

struct BlockPlan {
    size_t off = 0;  // first element
    size_t len = 0;  // elements
    size_t nchunks = 0;
    size_t chunk_base = 0;  // global index of the block's first chunk
};

struct ChunkPlan {
    explicit ChunkPlan(std::pmr::memory_resource *mem = std::pmr::get_default_resource()) : blocks(mem) {}

    size_t chunk = 1;  // elements per chunk (the last of a block may be shorter)
    std::pmr::vector<BlockPlan> blocks;
    size_t total_chunks = 0;

    // count elements split into nblocks blocks whose sizes differ by at most
    // one element (the first count % nblocks blocks get the extra one).
    void build_even(size_t count, int nblocks, size_t chunk_elems) {
        blocks.assign(size_t(nblocks), {});
        size_t base = count / size_t(nblocks), extra = count % size_t(nblocks), off = 0;
        for (int b = 0; b < nblocks; ++b) {
            blocks[b].off = off;
            blocks[b].len = base + (size_t(b) < extra ? 1 : 0);
            off += blocks[b].len;
        }
        finish(chunk_elems);
    }
    // nblocks blocks of block_len elements each, back to back.
    void build_fixed(size_t block_len, int nblocks, size_t chunk_elems) {
        blocks.assign(size_t(nblocks), {});
        for (int b = 0; b < nblocks; ++b) {
            blocks[b].off = size_t(b) * block_len;
            blocks[b].len = block_len;
        }
        finish(chunk_elems);
    }

    // nblocks blocks of counts[b] elements, at offs[b] (nullptr: back to
    // back from 0).
    void build_counts(const size_t *counts, const size_t *offs, int nblocks, size_t chunk_elems) {
        blocks.assign(size_t(nblocks), {});
        size_t off = 0;
        for (int b = 0; b < nblocks; ++b) {
            blocks[b].off = offs ? offs[b] : off;
            blocks[b].len = counts[b];
            off += counts[b];
        }
        finish(chunk_elems);
    }

    size_t chunk_off(size_t b, size_t k) const { return blocks[b].off + k * chunk; }
    size_t chunk_len(size_t b, size_t k) const {
        size_t start = k * chunk;
        size_t rest = blocks[b].len - start;
        return rest < chunk ? rest : chunk;
    }
    size_t global(size_t b, size_t k) const { return blocks[b].chunk_base + k; }

private:
    void finish(size_t chunk_elems) {
        chunk = chunk_elems ? chunk_elems : 1;
        total_chunks = 0;
        for (auto &bl : blocks) {
            bl.nchunks = (bl.len + chunk - 1) / chunk;
            bl.chunk_base = total_chunks;
            total_chunks += bl.nchunks;
        }
    }
};

}  // namespace terse
