/*
 * terse-train-sim: one data-parallel training step, simulated, to measure
 * how much of the gradient communication each way of issuing it hides
 * behind compute.
 *
 * A step is the backward pass (layers in reverse order, each computing for
 * its backward FLOPs, each gradient bucket's reduction issued as soon as the
 * bucket is complete) followed by the next forward pass (layers in order,
 * each needing its reduced parameters before it computes).  Modes:
 *   compute     no communication: the step's lower bound;
 *   blocking    MPI_Allreduce of each bucket right after its backward compute;
 *   iallreduce  MPI_Iallreduce of each bucket, waited just before the forward
 *               of the first layer that needs it;
 *   decoupled   MPI_Ireduce_scatter_block of each bucket during the backward
 *               pass, then one MPI_Iallgather per layer issued in layer order
 *               and waited just before that layer's forward (PipeDAP); when
 *               terse_set_next_priority(MPI_Comm, int) exists at run time
 *               each allgather gets priority (layers - index), so earlier
 *               layers are meant to be served first where larger means
 *               sooner; without it they run as issued (the same order).
 * Modes run interleaved, round after round, and the table reports each
 * mode's median step time and its speedup over `blocking`.
 *
 * The same binary measures the plain MPI library and, under LD_PRELOAD,
 * terse; nothing of terse is linked.
 *
 * Layer sizes come from the architectures' definitions, generated below:
 *  - resnet50: torchvision.models.resnet50 (v1.5: stride on the 3x3 conv),
 *    224x224 input; a layer is one convolution with its batch norm (weight
 *    and bias) or the final fully connected layer; 25,557,032 parameters,
 *    4.1 GMAC (8.2 GFLOP) forward per image;
 *  - gpt2: GPT-2 small (124M, Hugging Face GPT2LMHeadModel: 12 blocks, width
 *    768, 1024 positions, 50257-token vocabulary, LM head tied to the token
 *    embedding); a layer is one Linear or LayerNorm, the embeddings, or the
 *    (parameter-free, tied) LM head; 124,439,808 parameters; a sample is one
 *    1024-token sequence.
 * Backward costs twice the forward FLOPs.  Gradients are bucketed as
 * PyTorch DistributedDataParallel does (torch/nn/parallel/distributed.py):
 * parameters in reverse order, the first bucket closed at 1 MiB, the others
 * at 25 MiB (bucket_cap_mb); whole layers here rather than single tensors.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mpi.h"
#include "compute_loop.h"

typedef int (*priority_fn)(MPI_Comm, int);

static int world_rank, world_size;

static void die(const char *fmt, const char *arg) { bench_die("terse-train-sim", fmt, arg); }

/* ---------------------------------------------------------------- models */

typedef struct layer {
    char name[48];
    size_t params;    /* float parameters (gradient elements) */
    double fwd_flops; /* forward FLOPs per sample */
    int bucket;       /* bucket holding its gradient, -1 without parameters */
    size_t offset;    /* its first element in the bucket (allreduce layout) */
    size_t shard;     /* elements per rank in the decoupled layout: ceil(params / ranks) */
    size_t shard_off; /* its offset inside the rank's shard of the bucket */
} layer_t;

typedef struct model {
    layer_t *layers;
    int n, cap;
} model_t;

static void add_layer(model_t *m, const char *name, size_t params, double flops) {
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->layers = realloc(m->layers, (size_t)m->cap * sizeof *m->layers);
        if (!m->layers) die("out of memory for the layer table%s", "");
    }
    layer_t *l = &m->layers[m->n++];
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->params = params;
    l->fwd_flops = flops;
    l->bucket = -1;
}

/* A convolution without bias followed by batch norm (weight and bias). */
static void add_conv_bn(model_t *m, const char *name, int k, int cin, int cout, int hout) {
    add_layer(m, name, (size_t)k * k * cin * cout + 2 * (size_t)cout,
              2.0 * k * k * cin * cout * (double)hout * hout);
}

static void build_resnet50(model_t *m) {
    add_conv_bn(m, "conv1", 7, 3, 64, 112);
    static const int widths[4] = {64, 128, 256, 512}, blocks[4] = {3, 4, 6, 3};
    int in = 64, h = 56; /* after the 3x3/2 max pool */
    char name[48];
    for (int s = 0; s < 4; s++) {
        int w = widths[s];
        for (int b = 0; b < blocks[s]; b++) {
            int stride = (s > 0 && b == 0) ? 2 : 1, hout = h / stride;
            snprintf(name, sizeof name, "layer%d.%d.conv1", s + 1, b);
            add_conv_bn(m, name, 1, in, w, h);
            snprintf(name, sizeof name, "layer%d.%d.conv2", s + 1, b);
            add_conv_bn(m, name, 3, w, w, hout);
            snprintf(name, sizeof name, "layer%d.%d.conv3", s + 1, b);
            add_conv_bn(m, name, 1, w, 4 * w, hout);
            if (b == 0) {
                snprintf(name, sizeof name, "layer%d.%d.downsample", s + 1, b);
                add_conv_bn(m, name, 1, in, 4 * w, hout);
            }
            in = 4 * w;
            h = hout;
        }
    }
    add_layer(m, "fc", 2048 * 1000 + 1000, 2.0 * 2048 * 1000);
}

static void build_gpt2(model_t *m) {
    const double d = 768, ctx = 1024, vocab = 50257, ff = 4 * 768;
    /* Per 1024-token sample; attention's two products (QK^T, AV) are
     * counted with the layer that produces Q, K and V. */
    add_layer(m, "wte+wpe", (size_t)(vocab * d + ctx * d), 0);
    char name[48];
    for (int b = 0; b < 12; b++) {
        snprintf(name, sizeof name, "h.%d.ln_1", b);
        add_layer(m, name, (size_t)(2 * d), 5 * d * ctx);
        snprintf(name, sizeof name, "h.%d.attn.c_attn", b);
        add_layer(m, name, (size_t)(d * 3 * d + 3 * d), (2 * d * 3 * d + 4 * ctx * d) * ctx);
        snprintf(name, sizeof name, "h.%d.attn.c_proj", b);
        add_layer(m, name, (size_t)(d * d + d), 2 * d * d * ctx);
        snprintf(name, sizeof name, "h.%d.ln_2", b);
        add_layer(m, name, (size_t)(2 * d), 5 * d * ctx);
        snprintf(name, sizeof name, "h.%d.mlp.c_fc", b);
        add_layer(m, name, (size_t)(d * ff + ff), 2 * d * ff * ctx);
        snprintf(name, sizeof name, "h.%d.mlp.c_proj", b);
        add_layer(m, name, (size_t)(ff * d + d), 2 * ff * d * ctx);
    }
    add_layer(m, "ln_f", (size_t)(2 * d), 5 * d * ctx);
    add_layer(m, "lm_head (tied to wte)", 0, 2 * d * vocab * ctx);
}

/* ------------------------------------------------------------- options */

enum mode { MODE_COMPUTE, MODE_BLOCKING, MODE_IALLREDUCE, MODE_DECOUPLED, MODE_COUNT };
static const char *const mode_names[MODE_COUNT] = {"compute", "blocking", "iallreduce", "decoupled"};

typedef struct options {
    const char *model;
    double batch, flops, scale;
    double loop_rate; /* compute-loop units per second; 0: calibrate */
    double first_bucket_mib, bucket_mib;
    int steps, warmup, rounds, poll;
    int modes[MODE_COUNT], nmodes;
    int thread_multiple, csv, list;
} options_t;

static void usage(void) {
    if (world_rank != 0) return;
    printf("Usage: terse-train-sim [options]\n"
           "  --model NAME      resnet50 (default) or gpt2 (124M)\n"
           "  --batch N         samples per rank and step: images (resnet50) or 1024-token\n"
           "                    sequences (gpt2); default 8 and 1\n"
           "  --flops RATE      compute speed of a rank in FLOP/s (default 2e10)\n"
           "  --scale F         multiply every layer's parameters and FLOPs and the bucket\n"
           "                    caps by F (e.g. 0.125: the same model shape, 8x smaller)\n"
           "  --bucket-mib M    bucket cap (default 25); --first-bucket-mib M (default 1)\n"
           "  --modes LIST      comma-separated of compute,blocking,iallreduce,decoupled (all)\n"
           "  --steps N         timed steps per mode and round (default 3)\n"
           "  --warmup N        untimed steps per mode and round (default 1)\n"
           "  --rounds N        rounds over the modes, interleaved (default 3)\n"
           "  --loop-rate R     compute-loop units per second instead of calibrating (the\n"
           "                    rate another run printed: the same work in both runs)\n"
           "  --poll N          MPI_Testall calls on the outstanding requests during each\n"
           "                    layer's compute (default 0)\n"
           "  --thread LEVEL    multiple (default, as frameworks' communication threads\n"
           "                    need) or single (MPI_Init)\n"
           "  --list            print the layers and buckets, then run\n"
           "  -o csv            machine-readable table\n"
           "  -h, --help        this help\n");
}

static double parse_double(const char *opt, const char *v, double min) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x > min) || !isfinite(x)) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s: expected a number > %g, got \"%%s\"", opt, min);
        die(msg, v);
    }
    return x;
}

static int parse_count(const char *opt, const char *v, int min) {
    int x;
    if (!bench_parse_int(v, &x) || x < min) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s: expected a count >= %d, got \"%%s\"", opt, min);
        die(msg, v);
    }
    return x;
}

static void parse_modes(options_t *o, const char *list) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    o->nmodes = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int k = 0; k < MODE_COUNT; k++)
            if (strcmp(t, mode_names[k]) == 0) found = k;
        if (found < 0) die("--modes: expected compute, blocking, iallreduce or decoupled, got \"%s\"", t);
        if (o->nmodes < MODE_COUNT) o->modes[o->nmodes++] = found;
    }
    if (o->nmodes == 0) die("--modes: empty list \"%s\"", list);
}

static void parse_options(int argc, char **argv, options_t *o) {
    memset(o, 0, sizeof *o);
    o->model = "resnet50";
    o->batch = 0;
    /* An AVX2-FMA core peaks near 80 GFLOP/s single precision (32 FLOP per
     * cycle at 2.5 GHz); 4 ranks on a 2-core host get half a core each, and
     * a CPU framework's convolutions sustain about half of peak. */
    o->flops = 2e10;
    o->scale = 1;
    o->first_bucket_mib = 1;
    o->bucket_mib = 25;
    o->steps = 3;
    o->warmup = 1;
    o->rounds = 3;
    o->thread_multiple = 1;
    parse_modes(o, "compute,blocking,iallreduce,decoupled");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            MPI_Finalize();
            exit(EXIT_SUCCESS);
        } else if (strcmp(a, "--list") == 0) {
            o->list = 1, takes = 0;
        } else if (!v) {
            die("unknown option or missing value: %s (see --help)", a);
        } else if (strcmp(a, "--model") == 0) {
            if (strcmp(v, "resnet50") != 0 && strcmp(v, "gpt2") != 0)
                die("--model: expected resnet50 or gpt2, got \"%s\"", v);
            o->model = v;
        } else if (strcmp(a, "--batch") == 0) o->batch = parse_double(a, v, 0);
        else if (strcmp(a, "--flops") == 0) o->flops = parse_double(a, v, 0);
        else if (strcmp(a, "--scale") == 0) o->scale = parse_double(a, v, 0);
        else if (strcmp(a, "--loop-rate") == 0) o->loop_rate = parse_double(a, v, 0);
        else if (strcmp(a, "--bucket-mib") == 0) o->bucket_mib = parse_double(a, v, 0);
        else if (strcmp(a, "--first-bucket-mib") == 0) o->first_bucket_mib = parse_double(a, v, 0);
        else if (strcmp(a, "--modes") == 0) parse_modes(o, v);
        else if (strcmp(a, "--steps") == 0) o->steps = parse_count(a, v, 1);
        else if (strcmp(a, "--warmup") == 0) o->warmup = parse_count(a, v, 0);
        else if (strcmp(a, "--rounds") == 0) o->rounds = parse_count(a, v, 1);
        else if (strcmp(a, "--poll") == 0) o->poll = parse_count(a, v, 0);
        else if (strcmp(a, "--thread") == 0) {
            if (strcmp(v, "multiple") == 0) o->thread_multiple = 1;
            else if (strcmp(v, "single") == 0) o->thread_multiple = 0;
            else die("--thread: expected multiple or single, got \"%s\"", v);
        } else if (strcmp(a, "-o") == 0) {
            if (strcmp(v, "csv") == 0) o->csv = 1;
            else if (strcmp(v, "table") == 0) o->csv = 0;
            else die("-o: expected table or csv, got \"%s\"", v);
        } else {
            die("unknown option: %s (see --help)", a);
        }
        i += takes;
    }
    if (o->batch == 0) o->batch = strcmp(o->model, "gpt2") == 0 ? 1 : 8;
}

/* ------------------------------------------------------------- buckets */

typedef struct bucket {
    size_t count;      /* elements, allreduce layout */
    size_t shard;      /* elements per rank, decoupled layout */
    int first_layer;   /* lowest layer index in it: complete after its backward */
    float *grad, *sum; /* gradient and reduced gradient (allreduce) */
    float *rs_send;    /* decoupled: ranks x shard, rank-major */
    float *rs_shard;   /* decoupled: this rank's reduced shard */
} bucket_t;

typedef struct sim {
    model_t model;
    bucket_t *buckets;
    int nbuckets;
    float **params; /* decoupled: each layer's gathered parameters, ranks x layer shard */
    MPI_Request *bucket_req, *layer_req;
    priority_fn set_priority;
    double units_per_flop;
    const options_t *o;
} sim_t;

/* DDP's assignment: parameters in reverse order, a bucket closes once it
 * holds at least its cap (1 MiB for the first, 25 MiB after). */
static void assign_buckets(sim_t *s) {
    model_t *m = &s->model;
    size_t cap = (size_t)(s->o->first_bucket_mib * s->o->scale * 1048576.0), held = 0;
    s->nbuckets = 0;
    for (int i = m->n - 1; i >= 0; i--) {
        layer_t *l = &m->layers[i];
        if (l->params == 0) continue;
        if (held == 0) s->nbuckets++;
        l->bucket = s->nbuckets - 1;
        held += l->params * sizeof(float);
        if (held >= cap) {
            held = 0;
            cap = (size_t)(s->o->bucket_mib * s->o->scale * 1048576.0);
        }
    }
    s->buckets = calloc((size_t)s->nbuckets, sizeof *s->buckets);
    if (!s->buckets) die("out of memory for the buckets%s", "");
    for (int i = m->n - 1; i >= 0; i--) {
        layer_t *l = &m->layers[i];
        if (l->bucket < 0) continue;
        bucket_t *b = &s->buckets[l->bucket];
        l->offset = b->count;
        l->shard = (l->params + (size_t)world_size - 1) / (size_t)world_size;
        l->shard_off = b->shard;
        b->count += l->params;
        b->shard += l->shard;
        b->first_layer = i;
    }
}

static float *alloc_floats(size_t n, uint64_t seed) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) die("out of memory for the gradient buffers%s", "");
    rng_t r;
    rng_seed(&r, seed);
    if (!fill_laplace_float(p, n, &r)) die("out of memory for the data%s", "");
    return p;
}

static void build_sim(sim_t *s, const options_t *o) {
    memset(s, 0, sizeof *s);
    s->o = o;
    if (strcmp(o->model, "gpt2") == 0) build_gpt2(&s->model);
    else build_resnet50(&s->model);
    for (int i = 0; i < s->model.n; i++) {
        layer_t *l = &s->model.layers[i];
        if (l->params) {
            size_t p = (size_t)llround((double)l->params * o->scale);
            l->params = p ? p : 1;
        }
        l->fwd_flops *= o->scale;
    }
    assign_buckets(s);
    /* Buffers only for the modes that run: a full-size model's are large. */
    int allreduce = 0, decoupled = 0;
    for (int k = 0; k < o->nmodes; k++) {
        allreduce |= o->modes[k] == MODE_BLOCKING || o->modes[k] == MODE_IALLREDUCE;
        decoupled |= o->modes[k] == MODE_DECOUPLED;
    }
    uint64_t seed = 777 * 1000003ULL + (uint64_t)world_rank * 7919;
    for (int b = 0; b < s->nbuckets; b++) {
        bucket_t *k = &s->buckets[b];
        if (allreduce) {
            k->grad = alloc_floats(k->count, seed + 4 * (uint64_t)b);
            k->sum = alloc_floats(k->count, seed + 4 * (uint64_t)b + 1);
        }
        if (decoupled) {
            k->rs_send = alloc_floats(k->shard * (size_t)world_size, seed + 4 * (uint64_t)b + 2);
            k->rs_shard = alloc_floats(k->shard, seed + 4 * (uint64_t)b + 3);
        }
    }
    s->params = calloc((size_t)s->model.n, sizeof *s->params);
    s->bucket_req = malloc((size_t)s->nbuckets * sizeof *s->bucket_req);
    s->layer_req = malloc((size_t)s->model.n * sizeof *s->layer_req);
    if (!s->params || !s->bucket_req || !s->layer_req) die("out of memory for the requests%s", "");
    for (int i = 0; i < s->model.n; i++) {
        layer_t *l = &s->model.layers[i];
        if (l->params && decoupled)
            s->params[i] = alloc_floats(l->shard * (size_t)world_size, seed + 1000003ULL * (uint64_t)(i + 1));
        s->layer_req[i] = MPI_REQUEST_NULL;
    }
    for (int b = 0; b < s->nbuckets; b++) s->bucket_req[b] = MPI_REQUEST_NULL;
    s->set_priority = (priority_fn)dlsym(RTLD_DEFAULT, "terse_set_next_priority");
}

static void free_sim(sim_t *s) {
    for (int b = 0; b < s->nbuckets; b++) {
        free(s->buckets[b].grad);
        free(s->buckets[b].sum);
        free(s->buckets[b].rs_send);
        free(s->buckets[b].rs_shard);
    }
    for (int i = 0; i < s->model.n; i++) free(s->params[i]);
    free(s->params);
    free(s->buckets);
    free(s->bucket_req);
    free(s->layer_req);
    free(s->model.layers);
}

/* ---------------------------------------------------------------- a step */

/* A layer's compute, with --poll MPI_Testall calls on every outstanding
 * request spread through it. */
static void compute(sim_t *s, double flops) {
    double units = flops * s->o->batch * s->units_per_flop;
    int polls = s->o->poll;
    for (int k = 0; k <= polls; k++) {
        compute_loop_run(units / (polls + 1));
        if (k < polls) {
            int done;
            MPI_Testall(s->nbuckets, s->bucket_req, &done, MPI_STATUSES_IGNORE);
            MPI_Testall(s->model.n, s->layer_req, &done, MPI_STATUSES_IGNORE);
        }
    }
}

static void bucket_ready(sim_t *s, enum mode mode, int b) {
    bucket_t *k = &s->buckets[b];
    switch (mode) {
    case MODE_COMPUTE: break;
    case MODE_BLOCKING: MPI_Allreduce(k->grad, k->sum, (int)k->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case MODE_IALLREDUCE:
        MPI_Iallreduce(k->grad, k->sum, (int)k->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &s->bucket_req[b]);
        break;
    case MODE_DECOUPLED:
        MPI_Ireduce_scatter_block(k->rs_send, k->rs_shard, (int)k->shard, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                                  &s->bucket_req[b]);
        break;
    default: break;
    }
}

/* Decoupled: every reduce-scatter must be complete before the first
 * allgather (the first layers sit in the last bucket), then every layer's
 * allgather is issued in layer order, the same on every rank. */
static void issue_allgathers(sim_t *s) {
    MPI_Waitall(s->nbuckets, s->bucket_req, MPI_STATUSES_IGNORE);
    model_t *m = &s->model;
    for (int i = 0; i < m->n; i++) {
        layer_t *l = &m->layers[i];
        if (l->bucket < 0) continue;
        if (s->set_priority) s->set_priority(MPI_COMM_WORLD, m->n - i);
        MPI_Iallgather(s->buckets[l->bucket].rs_shard + l->shard_off, (int)l->shard, MPI_FLOAT, s->params[i],
                       (int)l->shard, MPI_FLOAT, MPI_COMM_WORLD, &s->layer_req[i]);
    }
}

static void wait_for_layer(sim_t *s, enum mode mode, int i) {
    const layer_t *l = &s->model.layers[i];
    if (l->bucket < 0) return;
    if (mode == MODE_IALLREDUCE) MPI_Wait(&s->bucket_req[l->bucket], MPI_STATUS_IGNORE);
    else if (mode == MODE_DECOUPLED) MPI_Wait(&s->layer_req[i], MPI_STATUS_IGNORE);
}

/* One step; returns its time on this rank. */
static double run_step(sim_t *s, enum mode mode) {
    model_t *m = &s->model;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = m->n - 1; i >= 0; i--) {
        compute(s, 2 * m->layers[i].fwd_flops);
        int b = m->layers[i].bucket;
        if (b >= 0 && s->buckets[b].first_layer == i) bucket_ready(s, mode, b);
    }
    if (mode == MODE_DECOUPLED) issue_allgathers(s);
    for (int i = 0; i < m->n; i++) {
        wait_for_layer(s, mode, i);
        compute(s, m->layers[i].fwd_flops);
    }
    MPI_Waitall(s->nbuckets, s->bucket_req, MPI_STATUSES_IGNORE);
    MPI_Waitall(m->n, s->layer_req, MPI_STATUSES_IGNORE);
    return MPI_Wtime() - t0;
}

/* ------------------------------------------------------------- output */

static void print_header(const sim_t *s, int provided, double units_per_s) {
    const options_t *o = s->o;
    const model_t *m = &s->model;
    double params = 0, flops = 0;
    for (int i = 0; i < m->n; i++) params += (double)m->layers[i].params, flops += m->layers[i].fwd_flops;
    printf("# terse-train-sim: one data-parallel training step (backward, then the next forward)\n");
    bench_print_libraries();
    printf("# Ranks: %d, thread level %s\n", world_size,
           provided == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "below multiple");
    printf(
        "# Model: %s x %g scale: %d layers, %.0f float gradients (%.1f MiB) in %d buckets (caps %g / %g MiB)\n",
        o->model, o->scale, m->n, params, params * 4 / 1048576.0, s->nbuckets, o->first_bucket_mib * o->scale,
        o->bucket_mib * o->scale);
    printf("# Compute: batch %g, %.3g FLOP forward per sample, backward 2x; %.3g FLOP/s per rank"
           " -> %.1f ms of compute per step\n",
           o->batch, flops, o->flops, 3 * flops * o->batch / o->flops * 1e3);
    printf("# Compute loop: %.6g units/s %s; --poll %d\n", units_per_s,
           o->loop_rate > 0 ? "given (--loop-rate)" : "calibrated on every rank at once", o->poll);
    printf("# Decoupled allgathers: %s\n", s->set_priority ? "terse_set_next_priority(comm, layers - index)"
                                                           : "no terse_set_next_priority: run as issued");
    printf("# Step time: slowest rank, mean of %d steps after %d warm-up, median over %d interleaved rounds\n",
           o->steps, o->warmup, o->rounds);
    if (o->csv) printf("mode,step_ms,min_ms,max_ms,speedup_vs_blocking,rounds\n");
    else printf("%-12s%14s%12s%12s%20s\n", "# Mode", "Step(ms)", "Min(ms)", "Max(ms)", "Speedup vs blocking");
    fflush(stdout);
}

static void list_layers(const sim_t *s) {
    const model_t *m = &s->model;
    printf("# %-4s %-28s %12s %14s %7s\n", "idx", "layer", "params", "fwd FLOP", "bucket");
    for (int i = 0; i < m->n; i++)
        printf("# %-4d %-28s %12zu %14.4g %7d\n", i, m->layers[i].name, m->layers[i].params,
               m->layers[i].fwd_flops, m->layers[i].bucket);
    for (int b = 0; b < s->nbuckets; b++)
        printf("# bucket %d: %zu floats (%.2f MiB), complete after layer %d's backward\n", b, s->buckets[b].count,
               (double)s->buckets[b].count * 4 / 1048576.0, s->buckets[b].first_layer);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int want = MPI_THREAD_MULTIPLE;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--thread") == 0 && strcmp(argv[i + 1], "single") == 0) want = MPI_THREAD_SINGLE;
    const int provided = bench_init_thread(&argc, &argv, want, &world_rank, &world_size);
    options_t o;
    parse_options(argc, argv, &o);
    if (want == MPI_THREAD_MULTIPLE && provided != MPI_THREAD_MULTIPLE)
        die("--thread multiple: the MPI library does not provide MPI_THREAD_MULTIPLE%s", "");

    sim_t s;
    build_sim(&s, &o);
    double units_per_s = o.loop_rate > 0 ? o.loop_rate : compute_loop_calibrate(MPI_COMM_WORLD);
    s.units_per_flop = units_per_s / o.flops;
    if (world_rank == 0) {
        print_header(&s, provided, units_per_s);
        if (o.list) list_layers(&s);
    }

    double *per_round = malloc((size_t)MODE_COUNT * (size_t)o.rounds * sizeof(double));
    if (!per_round) die("out of memory%s", "");
    for (int r = 0; r < o.rounds; r++) {
        for (int k = 0; k < o.nmodes; k++) {
            enum mode mode = (enum mode)o.modes[k];
            for (int w = 0; w < o.warmup; w++) run_step(&s, mode);
            double sum = 0;
            for (int t = 0; t < o.steps; t++) {
                double mine = run_step(&s, mode), slowest = 0;
                PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                sum += slowest;
            }
            per_round[mode * o.rounds + r] = sum / o.steps;
        }
    }
    if (world_rank == 0) {
        double med[MODE_COUNT], lo[MODE_COUNT], hi[MODE_COUNT];
        int have_blocking = 0;
        for (int k = 0; k < o.nmodes; k++) {
            int mode = o.modes[k];
            double *v = per_round + mode * o.rounds;
            qsort(v, (size_t)o.rounds, sizeof *v, cmp_double);
            med[mode] = o.rounds % 2 ? v[o.rounds / 2] : 0.5 * (v[o.rounds / 2 - 1] + v[o.rounds / 2]);
            lo[mode] = v[0];
            hi[mode] = v[o.rounds - 1];
            if (mode == MODE_BLOCKING) have_blocking = 1;
        }
        for (int k = 0; k < o.nmodes; k++) {
            int mode = o.modes[k];
            char speed[32] = "-";
            if (have_blocking && med[mode] > 0)
                snprintf(speed, sizeof speed, "%.2f", med[MODE_BLOCKING] / med[mode]);
            if (o.csv)
                printf("%s,%.2f,%.2f,%.2f,%s,%d\n", mode_names[mode], med[mode] * 1e3, lo[mode] * 1e3,
                       hi[mode] * 1e3, have_blocking ? speed : "", o.rounds);
            else
                printf("%-12s%14.2f%12.2f%12.2f%20s\n", mode_names[mode], med[mode] * 1e3, lo[mode] * 1e3,
                       hi[mode] * 1e3, speed);
        }
        fflush(stdout);
    }
    free(per_round);
    free_sim(&s);
    MPI_Finalize();
    return EXIT_SUCCESS;
}
