/*
 * terse codec plugin ABI.
 *
 * This is the only header a codec plugin sees.  A plugin is a shared object
 * that exports one function, TERSE_CODEC_ENTRY_SYMBOL, returning a pointer to
 * a static terse_codec_descriptor_t.  The engine checks abi_version and
 * struct_size at load time and refuses a plugin that does not match.
 *
 * The ABI is plain C: no C++ types, no exceptions, no allocation that crosses
 * the boundary except through the create/destroy and parse/free pairs.
 *
 * Framing: the engine, not the plugin, wraps every encoded payload in a
 * terse frame header (magic, codec id, datatype, element count, payload
 * length, CRC32C check value; see lib/frame.h).  A plugin's decoder is handed
 * only payloads whose header and check value passed, but it must still
 * bounds-check every length it reads from the payload and return
 * TERSE_CODEC_ERR_CORRUPT rather than read or write out of bounds: the check
 * value guards against accidents, not against a buggy or foreign encoder.
 *
 * Raw chunks: if a chunk would not shrink, or holds a value the codec cannot
 * represent (NaN, Inf), encode returns TERSE_CODEC_RAW and the engine sends
 * the chunk uncompressed (flagged raw in the frame header).  The engine then
 * combines raw and encoded frames itself, so non-finite values survive.
 *
 * Per-block arithmetic in plugins is written as TERSE_HD functions (host and
 * device) so that the same source compiles for CUDA.
 *
 * Device codecs (revision 3): a callback of a TERSE_MEM_CUDA instance
 * queues its kernels on call->stream and returns once their outcome is
 * known (it waits for that stream), so its status means what it means on
 * the host; it allocates nothing (device_workspace_size, sized at
 * create).  Its payloads are byte-identical to the host codec's for the
 * same input, so GPU and CPU ranks interoperate.
 */
#ifndef TERSE_CODEC_H
#define TERSE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TERSE_CODEC_ABI_VERSION 1u

/*
 * Backward-compatible additions within ABI version 1, numbered so that a
 * plugin can test for them with #if.  An engine ignores flag bits it does not
 * know, so a plugin built against a later revision still loads and runs, the
 * same way, on an engine of an earlier one.
 *   0: the descriptor as first published.
 *   1: TERSE_CODEC_FLAG_IDENTITY.
 *   2: error_bound and error_contract (formerly reserved[0] and [1]; a
 *      plugin of an earlier revision leaves them NULL: no stated bound).
 *   3: device codecs.  A descriptor that names TERSE_MEM_CUDA in mem_kinds
 *      runs its callbacks on device memory for instances created with
 *      setup.mem_kind TERSE_MEM_CUDA (every pointer argument then device
 *      memory: data, payloads, the doubles stats() writes and
 *      call->agreed_stats), on the stream call->stream.
 *      device_workspace_size (formerly reserved[0]; NULL: none needed)
 *      says how much device scratch such an instance needs; the engine
 *      allocates it once per instance and passes it in the new call fields
 *      workspace and workspace_size (terse_codec_call_t grew: a plugin
 *      reads them only where TERSE_CODEC_CALL_HAS() says the caller's
 *      struct has them).  The descriptor's size is unchanged; a plugin of
 *      an earlier revision (reserved slots NULL, host only) loads as before.
 */
#define TERSE_CODEC_ABI_REVISION 3u

/* Name of the entry point every plugin exports. */
#define TERSE_CODEC_ENTRY_SYMBOL "terse_codec_entry_v1"

#if defined(__CUDACC__)
#define TERSE_HD __host__ __device__
#else
#define TERSE_HD
#endif

#define TERSE_CODEC_EXPORT __attribute__((visibility("default")))

/* Element types the engine hands to codecs.  Values are stable (frame format). */
typedef enum terse_dtype {
    TERSE_DTYPE_FLOAT32 = 1,
    TERSE_DTYPE_FLOAT64 = 2,
    TERSE_DTYPE_INT32 = 3,
    TERSE_DTYPE_INT64 = 4,
    TERSE_DTYPE_FLOAT16 = 5,
    TERSE_DTYPE_BFLOAT16 = 6,
    TERSE_DTYPE_MAX_ = 7
} terse_dtype_t;

#define TERSE_DTYPE_BIT(dt) (1u << (unsigned)(dt))

/* Reduction operators.  Lossy codecs are only ever asked for TERSE_OP_SUM. */
typedef enum terse_op { TERSE_OP_SUM = 0, TERSE_OP_MAX = 1, TERSE_OP_MIN = 2 } terse_op_t;

/*
 * Where a buffer lives.  HOST and CUDA are what a codec runs on: a
 * descriptor's mem_kinds names only these, and the engine hands a codec
 * (terse_codec_setup_t.mem_kind) only a kind its descriptor names.  The
 * other two are what terse's detection reports of an application's buffer
 * (added under ABI version 1: the values above are unchanged, a plugin
 * that names them is refused, and none is ever handed them): page-locked host
 * memory of CUDA (cudaMallocHost, cudaHostRegister) and managed memory
 * (cudaMallocManaged).  Both are readable by the CPU, so the engine runs
 * the HOST codec on them.
 */
typedef enum terse_mem_kind {
    TERSE_MEM_HOST = 1u << 0,
    TERSE_MEM_CUDA = 1u << 1,
    TERSE_MEM_CUDA_HOST = 1u << 2,
    TERSE_MEM_CUDA_MANAGED = 1u << 3
} terse_mem_kind_t;

/*
 * How partial results of different ranks are combined (see DESIGN.md):
 *  RECOMPRESS: decode the incoming chunk, reduce, re-encode at every hop.
 *  SUMMABLE:   codes are added in the code domain with combine(); the ranks
 *              first agree on per-chunk statistics (e.g. block scales) with
 *              one small MAX-allreduce of the doubles that stats() produces.
 *  GATHER:     payloads are all-gathered and decoded-and-summed locally.
 */
typedef enum terse_reduce_mode {
    TERSE_REDUCE_RECOMPRESS = 0,
    TERSE_REDUCE_SUMMABLE = 1,
    TERSE_REDUCE_GATHER = 2
} terse_reduce_mode_t;

typedef enum terse_codec_status {
    TERSE_CODEC_OK = 0,
    TERSE_CODEC_RAW = 1,              /* encode: send this chunk raw instead */
    TERSE_CODEC_ERR_PARAM = -1,       /* bad parameter; message filled in    */
    TERSE_CODEC_ERR_UNSUPPORTED = -2, /* datatype / memory kind / op refused */
    TERSE_CODEC_ERR_NOSPACE = -3,     /* output capacity too small           */
    TERSE_CODEC_ERR_CORRUPT = -4,     /* payload malformed or truncated      */
    TERSE_CODEC_ERR_NOMEM = -5,
    TERSE_CODEC_ERR_INTERNAL = -6
} terse_codec_status_t;

/* Descriptor flags. */
#define TERSE_CODEC_FLAG_LOSSLESS (1u << 0)         /* bit-exact; eligible for MAX/MIN and integers */
#define TERSE_CODEC_FLAG_ERROR_BOUND (1u << 1)      /* promises |result - exact| <= bound end to end */
#define TERSE_CODEC_FLAG_FEEDBACK_DEFAULT (1u << 2) /* error feedback on unless feedback=off */
/* Revision 1.  The payload is the chunk's elements exactly as they lie in
 * memory (count * element size bytes), and decode with accumulate is the
 * plain element-wise op.  The engine then skips encode and decode: it sends
 * raw frames and reduces straight out of its receive buffers.  Requires
 * TERSE_CODEC_FLAG_LOSSLESS and TERSE_REDUCE_RECOMPRESS (refused at load
 * otherwise).  Without it the engine calls encode/decode, with the same
 * results, only slower. */
#define TERSE_CODEC_FLAG_IDENTITY (1u << 3)

/* Revision 2: the kind of an end-to-end error bound a codec states
 * (error_contract below), for one element r of a reduced result against the
 * exact sum S of the ranks' inputs:
 *   TERSE_BOUND_ABS: |r - S| <= value;
 *   TERSE_BOUND_REL: |r - S| <= value * m, m the largest |x| any rank has
 *                    in the chunk holding the element.
 * Neither counts the final rounding of r to the output type (one unit in
 * its last place). */
typedef enum terse_bound_kind {
    TERSE_BOUND_NONE = 0,
    TERSE_BOUND_ABS = 1,
    TERSE_BOUND_REL = 2
} terse_bound_kind_t;

/* One key=value pair of a codec specification, e.g. {"bits", "8"}. */
typedef struct terse_codec_kv {
    const char *key;
    const char *value;
} terse_codec_kv_t;

/* What an instance is created for.  Fixed for the life of the instance. */
typedef struct terse_codec_setup {
    uint32_t struct_size; /* sizeof(terse_codec_setup_t) */
    terse_dtype_t dtype;
    terse_mem_kind_t mem_kind;
    int nranks;             /* ranks contributing to one reduced element */
    size_t max_chunk_count; /* elements per chunk never exceed this */
} terse_codec_setup_t;

/* Per-call context passed to encode/decode. */
typedef struct terse_codec_call {
    uint32_t struct_size;       /* sizeof(terse_codec_call_t) */
    const double *agreed_stats; /* SUMMABLE: stats() of this chunk reduced with MAX over ranks; else NULL */
    uint64_t seed;              /* for stochastic rounding; identical inputs + seed give identical output */
    void *stream;               /* cudaStream_t for TERSE_MEM_CUDA, else NULL */
    /* Revision 3.  TERSE_MEM_CUDA instances: device_workspace_size() bytes
     * of device memory, for this call alone (NULL, 0 for host instances). */
    void *workspace;
    size_t workspace_size;
} terse_codec_call_t;

/* Whether the caller's call struct has a field (a plugin newer than the
 * engine must not read past the struct the engine filled in). */
#define TERSE_CODEC_CALL_HAS(call, field) \
    ((call) != NULL && (call)->struct_size >= offsetof(terse_codec_call_t, field) + sizeof((call)->field))

typedef struct terse_codec_descriptor {
    uint32_t abi_version;    /* TERSE_CODEC_ABI_VERSION */
    uint32_t struct_size;    /* sizeof(terse_codec_descriptor_t) */
    const char *name;        /* [a-z0-9_]+, as used in TERSE_CODEC */
    const char *description; /* one line for listings */
    const char *params_help; /* accepted keys and ranges, for error messages */
    uint32_t dtypes;         /* mask of TERSE_DTYPE_BIT() */
    uint32_t mem_kinds;      /* mask of terse_mem_kind_t */
    uint32_t flags;          /* TERSE_CODEC_FLAG_* */
    terse_reduce_mode_t mode;

    /* Validate and parse parameters.  On error return TERSE_CODEC_ERR_PARAM
     * and write a message naming the key, the bad value and the accepted
     * values into err (NUL-terminated, at most errlen bytes).  Unknown keys
     * are errors.  The engine consumes the generic key "feedback" itself. */
    int (*parse)(const terse_codec_kv_t *kv, size_t nkv, void **params, char *err, size_t errlen);
    void (*free_params)(void *params);
    /* Canonical text of parsed params (for agreement across ranks); returns
     * length written, excluding the NUL. */
    size_t (*params_string)(const void *params, char *buf, size_t buflen);

    int (*create)(const void *params, const terse_codec_setup_t *setup, void **instance, char *err,
                  size_t errlen);
    void (*destroy)(void *instance);

    /* Upper bound of the payload encode() may produce for count elements. */
    size_t (*max_encoded_size)(void *instance, size_t count);

    /* SUMMABLE only (NULL otherwise): number of doubles stats() writes for a
     * chunk of count elements, and the local statistics themselves. */
    size_t (*stats_count)(void *instance, size_t count);
    int (*stats)(void *instance, const void *src, size_t count, double *out, const terse_codec_call_t *call);

    /* Encode count elements of src into dst (capacity dst_cap).  Writes the
     * payload length to *dst_len.  May return TERSE_CODEC_RAW. */
    int (*encode)(void *instance, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                  const terse_codec_call_t *call);

    /* Decode a payload of src_len bytes holding count elements into dst.
     * accumulate == 0: dst = decoded;  accumulate != 0: dst = dst (op) decoded. */
    int (*decode)(void *instance, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                  terse_op_t op, const terse_codec_call_t *call);

    /* SUMMABLE only (NULL otherwise): out = a + b in the code domain.  Both
     * inputs were produced by encode() (or combine()) of the same chunk with
     * the same agreed stats; contributors tells how many ranks each side sums
     * so the codec can size its integers. */
    int (*combine)(void *instance, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
                   int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len,
                   const terse_codec_call_t *call);

    /* Revision 2, optional (NULL: the codec states no bound).  Lossy codecs:
     * the largest |result - exact sum| the codec promises for one allreduce
     * of count elements of dtype on nranks ranks whose inputs (every rank's
     * finite elements together) have largest magnitude max_abs and value
     * range range (max - min).  A bound that depends on finer statistics
     * (per block, per chunk) is evaluated at these, which bound them.  A
     * negative return: no bound for these parameters.  The engine's guard
     * (terse(7), guard=) compares the measured error with it. */
    double (*error_bound)(const void *params, terse_dtype_t dtype, size_t count, int nranks, double max_abs,
                          double range);

    /* Revision 2, optional (NULL: no stated contract): the same contract in
     * the form a user's error budget is written in, independent of the data:
     * for these parameters on nranks ranks, for every datatype it supports,
     * writes *kind (terse_bound_kind_t) and *value and returns
     * TERSE_CODEC_OK; TERSE_BOUND_NONE when these parameters state none.
     * The planner's TERSE_CODEC=auto compares it with the budget. */
    int (*error_contract)(const void *params, int nranks, int *kind, double *value);

    /* Revision 3, optional (NULL: none needed; formerly reserved[0]).  For
     * an instance created with setup.mem_kind TERSE_MEM_CUDA: the bytes of
     * device workspace each of its calls needs (call->workspace), for
     * chunks of up to setup.max_chunk_count elements.  Host instances: 0. */
    size_t (*device_workspace_size)(void *instance);

    void *reserved[5]; /* must be NULL */
} terse_codec_descriptor_t;

/* Type of the exported entry point. */
typedef const terse_codec_descriptor_t *(*terse_codec_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* TERSE_CODEC_H */
