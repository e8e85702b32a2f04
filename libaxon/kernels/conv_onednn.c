/* float32 convolutions, and bfloat16 forwards, on oneDNN's direct convolution primitives (conv_impl.h:
 * conv_onednn_phase), for conv_exec.c.
 *
 * Why: the column-buffer path (conv_exec.c) spends about 40% of a 3x3 convolution building its columns, and torch
 * CPU runs oneDNN's direct kernels, which read the image in a blocked layout instead: 1.4-2.3x faster than the columns
 * on 3x3 layers of 16-256 channels on this project's Sapphire Rapids host (docs/benchmarks.md, "Convolutions on
 * oneDNN's direct kernels"). 1x1 convolutions of stride 1 stay on the column path, where they are a plain GEMM with
 * no columns to build, and measured faster there than oneDNN's reorders plus kernel.
 *
 * Each phase is split over the pool by images: participant i runs one primitive, created for its count of images,
 * on the calling thread alone (onednn_impl.h), converting its tensors to and from the layouts the primitive asks for
 * (reorders) in its own scratch. The weight is reordered once, before the split, where the phase reads it. The weight
 * gradient is a sum over images: participant 0 writes the result and the others a partial each, added after in
 * participant order, so results are the same run after run. With fewer images than participants (one image) a
 * phase without groups splits the channels of the tensor it writes instead, in blocks of 16 (Y's for the forward
 * and the weight gradient, X's for the input gradient), each participant reordering the whole of the tensors it
 * reads and its slice of the weight itself; grouped ones take the column path, which splits an image's positions.
 *
 * Only implementations named jit or brgconv are taken: oneDNN's reference kernels are scalar loops, and its "gemm"
 * ones fail inside a PyTorch process (gemm_onednn.c's onednn_accept says why). When none is offered, or a run fails,
 * the phase returns 0 and conv_exec.c runs the column path, which rewrites the phase's whole output. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"
#include "onednn_impl.h"

#ifdef AXON_HAVE_ONEDNN
#include <pthread.h>

/* AXON_CONV=im2col keeps every convolution on the column path (tests and benchmarks compare the two). Read once. */
static int co_disabled_flag;
static void co_disabled_init(void) {
    const char *e = getenv("AXON_CONV");
    co_disabled_flag = e != NULL && strcmp(e, "im2col") == 0;
}
static int co_disabled(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, co_disabled_init);
    return co_disabled_flag;
}

/* An operand's slot: the image X, the weight W, the output Y, the bias B (forward only). */
enum { CO_X, CO_W, CO_Y, CO_B, CO_SLOTS };

/* How a phase is shared out over the pool: by images, or (fewer images than threads, no groups) by channels. */
enum { CO_BY_IMAGES, CO_BY_X_CHANNELS, CO_BY_Y_CHANNELS };

typedef struct co_key {
    int phase, nsp, has_bias, nthreads, dtype;
    int nhwc, w_nhwc;                /* X and Y, W channels-last (conv_args_t) */
    int64_t batch, groups, cx, cy;
    int64_t cx_stride, cy_stride;    /* X's and Y's channels per image in memory: cx and cy, or more for a slice */
    int64_t xs[3], ys[3], ks[3], stride[3], pad_l[3], pad_r[3], dil[3]; /* the nsp spatial dims, then zeros */
} co_key_t;

typedef struct co_operand {
    int used, out;               /* out: the primitive writes it (reordered after the run), else it reads it */
    dnnl_memory_desc_t user;     /* the tensor's own layout */
    dnnl_memory_desc_t prim;     /* the layout the primitive asked for */
    dnnl_primitive_t reorder;    /* user -> prim for inputs, prim -> user for outputs; NULL when they are equal */
    size_t bytes;                /* of prim */
} co_operand_t;

typedef struct co_plan {
    int phase;
    dnnl_primitive_t prim;
    co_operand_t op[CO_SLOTS];
    size_t scratchpad;           /* bytes of the largest scratchpad its primitives ask for */
} co_plan_t;

static int co_accept(const char *impl) { return strncmp(impl, "jit", 3) == 0 || strncmp(impl, "brgconv", 7) == 0; }

static void co_plan_free(void *obj) {
    co_plan_t *p = obj;
    if (p->prim) dnnl_primitive_destroy(p->prim);
    for (int i = 0; i < CO_SLOTS; i++)
        if (p->op[i].reorder) dnnl_primitive_destroy(p->op[i].reorder);
    free(p);
}

/* The reorder between an operand's two layouts (none when equal). 0, or -1 when oneDNN refuses. */
static int co_reorder_make(co_operand_t *o, const_dnnl_primitive_attr_t attr, size_t *scratchpad) {
    o->bytes = dnnl_memory_desc_get_size(&o->prim);
    if (dnnl_memory_desc_equal(&o->user, &o->prim)) return 0;
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_memory_desc_t *from = o->out ? &o->prim : &o->user, *to = o->out ? &o->user : &o->prim;
    dnnl_engine_t eng = axon_onednn_engine();
    if (dnnl_reorder_primitive_desc_create(&pd, from, eng, to, eng, attr) != dnnl_success) return -1;
    const size_t sp = axon_onednn_scratchpad_bytes(pd);
    if (sp > *scratchpad) *scratchpad = sp;
    int rc = dnnl_primitive_create(&o->reorder, pd) == dnnl_success ? 0 : -1;
    if (rc != 0) o->reorder = NULL;
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* Build the primitive and reorders for a co_key_t: *obj NULL when oneDNN offers no kernel co_accept takes. */
static int co_plan_create(const void *key, void **obj) {
    const co_key_t *k = key;
    *obj = NULL;
    co_plan_t *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->phase = k->phase;
    const int S = k->nsp, grouped = k->groups > 1;
    dnnl_dims_t xd = {k->batch, k->cx}, yd = {k->batch, k->cy}, wd = {0}, bd = {k->cy};
    dnnl_dims_t strides = {0}, dil = {0}, pl = {0}, pr = {0};
    int wn = 0;
    if (grouped) wd[wn++] = k->groups;
    wd[wn++] = k->cy / k->groups;
    wd[wn++] = k->cx / k->groups;
    for (int i = 0; i < S; i++) {
        xd[2 + i] = k->xs[i], yd[2 + i] = k->ys[i], wd[wn + i] = k->ks[i];
        strides[i] = k->stride[i], dil[i] = k->dil[i] - 1, pl[i] = k->pad_l[i], pr[i] = k->pad_r[i];
    }
    dnnl_memory_desc_t any[3], bias;
    co_operand_t *o = p->op;
    /* Strides of X [batch, cx_stride, xs] and Y [batch, cy_stride, ys], row-major or (channels-last) with the
     * channels innermost, of which a slice of channels takes the first cx or cy. */
    dnnl_dims_t xst = {0}, yst = {0}, wst = {0};
    xst[S + 1] = yst[S + 1] = 1;
    for (int i = S; i >= 0; i--) {
        xst[i] = xst[i + 1] * (i == 0 ? k->cx_stride : xd[i + 1]);
        yst[i] = yst[i + 1] * (i == 0 ? k->cy_stride : yd[i + 1]);
    }
    if (k->nhwc) {
        xst[1] = yst[1] = 1;
        xst[S + 1] = k->cx_stride, yst[S + 1] = k->cy_stride;
        for (int i = S; i >= 2; i--) xst[i] = xst[i + 1] * xd[i + 1], yst[i] = yst[i + 1] * yd[i + 1];
        xst[0] = xst[2] * xd[2], yst[0] = yst[2] * yd[2];
    }
    /* W's strides over its dims ([groups,] cy/G, cx/G, ks), row-major [cy, icount, ks] or channels-last [cy, ks,
     * icount], where icount is X's channels per group in memory (a slice of X's channels takes the first cx). */
    const int64_t icount = grouped ? k->cx / k->groups : k->cx_stride;
    int64_t ksp = 1;
    for (int i = 0; i < S; i++) ksp *= k->ks[i];
    int64_t inner = k->w_nhwc ? icount : 1;
    for (int i = S - 1; i >= 0; inner *= k->ks[i], i--) wst[wn + i] = inner;
    wst[wn - 1] = k->w_nhwc ? 1 : ksp;                        /* X's channel */
    wst[wn - 2] = icount * ksp;                                /* Y's channel within its group */
    if (grouped) wst[0] = icount * ksp * (k->cy / k->groups); /* the group */
    const dnnl_data_type_t dt = k->dtype == AXON_BFLOAT16 ? dnnl_bf16 : dnnl_f32;
    int ok = dnnl_memory_desc_init_by_strides(&o[CO_X].user, S + 2, xd, dt, xst) == dnnl_success &&
             dnnl_memory_desc_init_by_strides(&o[CO_Y].user, S + 2, yd, dt, yst) == dnnl_success &&
             dnnl_memory_desc_init_by_strides(&o[CO_W].user, wn + S, wd, dt, wst) == dnnl_success &&
             dnnl_memory_desc_init_by_tag(&bias, 1, bd, dt, dnnl_x) == dnnl_success &&
             dnnl_memory_desc_init_by_tag(&any[CO_X], S + 2, xd, dt, dnnl_format_tag_any) == dnnl_success &&
             dnnl_memory_desc_init_by_tag(&any[CO_Y], S + 2, yd, dt, dnnl_format_tag_any) == dnnl_success &&
             dnnl_memory_desc_init_by_tag(&any[CO_W], wn + S, wd, dt, dnnl_format_tag_any) == dnnl_success;
    dnnl_primitive_attr_t attr = NULL;
    ok = ok && dnnl_primitive_attr_create(&attr) == dnnl_success &&
         dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    dnnl_convolution_desc_t fd, bd_desc;
    const dnnl_prop_kind_t prop = k->phase == CONV_ONEDNN_FORWARD ? dnnl_forward_inference : dnnl_forward_training;
    dnnl_primitive_desc_t fwd = NULL, pd = NULL;
    /* Channels-last images are first offered to the kernels as they are (no reorders of X and Y: torch CPU's way);
     * when no kernel takes them so, and always for channels-first ones, the kernels pick their layout. */
    for (int attempt = k->nhwc ? 0 : 1; ok && attempt < 2 && pd == NULL; attempt++) {
        const dnnl_memory_desc_t *x = attempt ? &any[CO_X] : &o[CO_X].user, *y = attempt ? &any[CO_Y] : &o[CO_Y].user;
        int fine = dnnl_dilated_convolution_forward_desc_init(&fd, prop, dnnl_convolution_direct, x, &any[CO_W],
                                                              k->has_bias ? &bias : NULL, y, strides, dil, pl,
                                                              pr) == dnnl_success;
        fwd = fine ? axon_onednn_pick(&fd, attr, NULL, k->nthreads, co_accept) : NULL, pd = fwd;
        if (fwd && k->phase == CONV_ONEDNN_BACKWARD_DATA)
            fine = dnnl_dilated_convolution_backward_data_desc_init(&bd_desc, dnnl_convolution_direct, x, &any[CO_W],
                                                                    y, strides, dil, pl, pr) == dnnl_success;
        else if (fwd && k->phase == CONV_ONEDNN_BACKWARD_WEIGHTS)
            fine = dnnl_dilated_convolution_backward_weights_desc_init(&bd_desc, dnnl_convolution_direct, x,
                                                                       &any[CO_W], NULL, y, strides, dil, pl,
                                                                       pr) == dnnl_success;
        if (fwd && k->phase != CONV_ONEDNN_FORWARD)
            pd = fine ? axon_onednn_pick(&bd_desc, attr, fwd, k->nthreads, co_accept) : NULL;
        if (pd == NULL && fwd) dnnl_primitive_desc_destroy(fwd), fwd = NULL;
    }
    int rc = 0;
    if (pd) {
        /* Which operand the primitive writes, and the query naming each slot's layout, per phase. */
        static const dnnl_query_t q[3][3] = {
            {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
            {dnnl_query_diff_src_md, dnnl_query_weights_md, dnnl_query_diff_dst_md},
            {dnnl_query_src_md, dnnl_query_diff_weights_md, dnnl_query_diff_dst_md}};
        static const int written[3] = {CO_Y, CO_X, CO_W};
        p->scratchpad = axon_onednn_scratchpad_bytes(pd);
        for (int s = CO_X; s <= CO_Y && rc == 0; s++) {
            o[s].used = 1;
            o[s].out = s == written[k->phase];
            o[s].prim = *dnnl_primitive_desc_query_md(pd, q[k->phase][s], 0);
            rc = co_reorder_make(&o[s], attr, &p->scratchpad);
        }
        if (k->has_bias) { /* [cy] in any layout is plain */
            o[CO_B].used = 1;
            o[CO_B].user = o[CO_B].prim = bias;
        }
        if (rc == 0 && dnnl_primitive_create(&p->prim, pd) != dnnl_success) p->prim = NULL;
    }
    if (pd && pd != fwd) dnnl_primitive_desc_destroy(pd);
    if (fwd) dnnl_primitive_desc_destroy(fwd);
    dnnl_primitive_attr_destroy(attr);
    if (p->prim) *obj = p;
    else co_plan_free(p);
    return 0;
}

/* Bytes of scratch a participant needs for plan p: each operand it reorders itself, then the scratchpad. */
static size_t co_scratch_bytes(const co_plan_t *p, int w_shared) {
    size_t total = 0;
    for (int s = 0; s < CO_SLOTS; s++)
        if (p->op[s].reorder && !(s == CO_W && w_shared)) total += (p->op[s].bytes + 63) / 64 * 64;
    return total + p->scratchpad;
}

static dnnl_memory_t co_memory(const dnnl_memory_desc_t *md, void *ptr) {
    dnnl_memory_t m = NULL;
    return dnnl_memory_create(&m, md, axon_onednn_engine(), ptr) == dnnl_success ? m : NULL;
}

static int co_reorder_run(dnnl_primitive_t r, dnnl_stream_t st, dnnl_memory_t from, dnnl_memory_t to,
                          dnnl_memory_t pad) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, pad}};
    return axon_onednn_run(r, st, 1, pad ? 3 : 2, args);
}

/* Run plan p on this thread: ptr[slot] are the operands in their own layouts; w_ready, when not NULL, is the weight
 * already in the primitive's layout. 0; -1 when oneDNN fails; -2 when scratch cannot be had. */
static int co_execute(const co_plan_t *p, void *const ptr[CO_SLOTS], void *w_ready) {
    static const int arg[3][CO_SLOTS] = {
        {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS},
        {DNNL_ARG_DIFF_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_DST, 0},
        {DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_DST, 0}};
    dnnl_stream_t st;
    char *scratch;
    if (axon_onednn_thread(co_scratch_bytes(p, w_ready != NULL), &st, &scratch) != 0) return -2;
    dnnl_memory_t user[CO_SLOTS] = {NULL}, prim[CO_SLOTS] = {NULL}, pad = NULL;
    dnnl_exec_arg_t args[CO_SLOTS + 1];
    int nargs = 0, ok = 1;
    for (int s = 0; s < CO_SLOTS && ok; s++) {
        const co_operand_t *o = &p->op[s];
        if (!o->used) continue;
        void *mine = ptr[s];
        if (o->reorder && s == CO_W && w_ready) {
            mine = w_ready;
        } else if (o->reorder) {
            mine = scratch;
            scratch += (o->bytes + 63) / 64 * 64;
            ok = (user[s] = co_memory(&o->user, ptr[s])) != NULL;
        }
        ok = ok && (prim[s] = co_memory(&o->prim, mine)) != NULL;
        args[nargs].arg = arg[p->phase][s];
        args[nargs++].memory = prim[s];
    }
    if (ok && p->scratchpad > 0) {
        dnnl_memory_desc_t md;
        dnnl_dims_t d = {(dnnl_dim_t)p->scratchpad};
        ok = dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_u8, dnnl_a) == dnnl_success &&
             (pad = co_memory(&md, scratch)) != NULL;
        args[nargs].arg = DNNL_ARG_SCRATCHPAD;
        args[nargs++].memory = pad;
    }
    for (int s = 0; s < CO_SLOTS && ok; s++)
        if (user[s] && !p->op[s].out) ok = co_reorder_run(p->op[s].reorder, st, user[s], prim[s], pad) == 0;
    ok = ok && axon_onednn_run(p->prim, st, 1, nargs, args) == 0;
    for (int s = 0; s < CO_SLOTS && ok; s++)
        if (user[s] && p->op[s].out) ok = co_reorder_run(p->op[s].reorder, st, prim[s], user[s], pad) == 0;
    for (int s = 0; s < CO_SLOTS; s++) {
        if (user[s]) dnnl_memory_destroy(user[s]);
        if (prim[s]) dnnl_memory_destroy(prim[s]);
    }
    if (pad) dnnl_memory_destroy(pad);
    return ok ? 0 : -1;
}

/* The key for a phase of convolution a on `batch` images, cx of X's channels and cy of Y's: spatial dimensions of
 * size 1 that neither pad nor stride (conv.c pads 1-D and 2-D convolutions to three) are dropped, so oneDNN sees the
 * convolution's own rank. 0, or -1 when oneDNN cannot describe it: an output that the left padding alone does not
 * reach (a transposed convolution's output_padding of a stride or more). */
static int co_key_make(const conv_args_t *a, int phase, int has_bias, int64_t batch, int64_t cx, int64_t cy,
                       co_key_t *k) {
    const conv_geom_t *g = &a->g;
    memset(k, 0, sizeof *k); /* padding too: keys are compared with memcmp */
    k->phase = phase, k->has_bias = has_bias, k->nthreads = 1, k->dtype = (int)a->dt, k->nhwc = a->nhwc;
    k->w_nhwc = a->w_nhwc;
    k->batch = batch, k->groups = g->groups, k->cx = cx, k->cy = cy, k->cx_stride = g->cx, k->cy_stride = g->cy;
    int first = 0;
    while (first < 2 && g->xs[first] == 1 && g->ys[first] == 1 && g->ks[first] == 1 && g->pad[first] == 0) first++;
    k->nsp = 3 - first;
    for (int i = first; i < 3; i++) {
        const int d = i - first;
        k->xs[d] = g->xs[i], k->ys[d] = g->ys[i], k->ks[d] = g->ks[i];
        k->stride[d] = g->stride[i], k->dil[d] = g->dil[i], k->pad_l[d] = g->pad[i];
        /* the right padding that ends the last window at the image's end (PyTorch's floor leaves the rest unread) */
        k->pad_r[d] = (g->ys[i] - 1) * g->stride[i] + g->dil[i] * (g->ks[i] - 1) + 1 - g->xs[i] - g->pad[i];
        if (k->pad_r[d] < 0 || k->pad_r[d] > g->pad[i]) return -1;
    }
    return 0;
}

typedef struct co_job {
    const conv_args_t *a;
    int phase, nparts;
    int64_t lo, extra;               /* participant i takes lo images, one more when i < extra ... */
    int split;                       /* ... or, by X's or Y's channels: [i * cpart, (i + 1) * cpart) of every image */
    int64_t cpart;
    const co_plan_t *plan[2];        /* for lo and lo + 1 images, or for cpart and the last part's channels */
    void *w_ready;                   /* the weight reordered once for every participant, or NULL */
    float *partials;                 /* phase 3: nparts - 1 weight gradients after participant 0's */
    atomic_int failed;               /* 1: a oneDNN run failed; 2: scratch could not be had */
} co_job_t;

static void co_part(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    co_job_t *j = ctx;
    const conv_args_t *a = j->a;
    const conv_geom_t *g = &a->g;
    const int64_t xi = g->cx * g->xsp, yi = g->cy * g->ysp; /* elements per image */
    for (int64_t i = begin; i < end; i++) {
        int64_t n0 = i * j->lo + (i < j->extra ? i : j->extra), nb = j->lo + (i < j->extra), c0 = 0, nc = g->cx;
        int v = nb > j->lo;
        if (j->split) {
            const int64_t total = j->split == CO_BY_X_CHANNELS ? g->cx : g->cy;
            n0 = 0, nb = g->batch, c0 = i * j->cpart;
            nc = (c0 + j->cpart < total ? c0 + j->cpart : total) - c0;
            v = nc != j->cpart;
        }
        if (nb <= 0 || nc <= 0) continue;
        /* a slice's first channel in X and in Y; without groups W's rows are Y's channels and its columns X's */
        const int64_t xc = j->split == CO_BY_X_CHANNELS ? c0 : 0, yc = j->split == CO_BY_Y_CHANNELS ? c0 : 0;
        const int64_t xc_at = a->nhwc ? xc : xc * g->xsp, yc_at = a->nhwc ? yc : yc * g->ysp; /* their offsets */
        void *ptr[CO_SLOTS] = {NULL};
        const size_t es = axon_dtype_size(a->dt);
#define CO_AT(p, off) ((void *)((const char *)(p) + (size_t)(off) * es))
        if (j->phase == CONV_ONEDNN_FORWARD) {
            ptr[CO_X] = CO_AT(a->x_in, n0 * xi), ptr[CO_W] = CO_AT(a->w, yc * g->rows);
            ptr[CO_Y] = CO_AT(a->y_out, n0 * yi + yc_at);
            ptr[CO_B] = a->bias_y ? CO_AT(a->bias_y, yc) : NULL;
        } else if (j->phase == CONV_ONEDNN_BACKWARD_DATA) {
            ptr[CO_X] = CO_AT(a->x_out, n0 * xi + xc_at), ptr[CO_W] = CO_AT(a->w, a->w_nhwc ? xc : xc * g->ksp);
            ptr[CO_Y] = CO_AT(a->y_in, n0 * yi);
        } else {
            ptr[CO_X] = CO_AT(a->x_w, n0 * xi), ptr[CO_Y] = CO_AT(a->y_w, n0 * yi + yc_at);
            ptr[CO_W] = j->split || i == 0 ? CO_AT(a->w_out, yc * g->rows) : j->partials + (i - 1) * g->cy * g->rows;
        }
#undef CO_AT
        const int rc = co_execute(j->plan[v], ptr, j->w_ready);
        axon_onednn_thread_trim();
        if (rc != 0) {
            atomic_store(&j->failed, rc == -2 ? 2 : 1);
            continue;
        }
        if (j->phase == CONV_ONEDNN_BACKWARD_DATA && a->bias_x) { /* a transposed convolution's bias */
            const float *b = (const float *)a->bias_x + xc;
            const int64_t nx = j->split == CO_BY_X_CHANNELS ? nc : g->cx;
            for (int64_t n = 0; n < nb; n++)
                if (a->nhwc)
                    for (int64_t e = 0; e < g->xsp; e++) {
                        float *px = (float *)ptr[CO_X] + n * xi + e * g->cx;
                        for (int64_t q = 0; q < nx; q++) px[q] += b[q];
                    }
                else
                    for (int64_t q = 0; q < nx; q++) {
                        float *row = (float *)ptr[CO_X] + n * xi + q * g->xsp;
                        for (int64_t e = 0; e < g->xsp; e++) row[e] += b[q];
                    }
        }
    }
}

/* w_out += the partial weight gradients, elements [begin, end), in participant order. */
static void co_weight_sum(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const co_job_t *j = ctx;
    const int64_t nw = j->a->g.cy * j->a->g.rows;
    float *w = (float *)j->a->w_out;
    for (int p = 0; p + 1 < j->nparts; p++)
        for (int64_t e = begin; e < end; e++) w[e] += j->partials[p * nw + e];
}

/* Reorder the weight into the primitive's layout once, on this thread, for every participant. NULL on failure. */
static void *co_weight_ready(const co_plan_t *p, const void *w) {
    const co_operand_t *o = &p->op[CO_W];
    dnnl_stream_t st;
    char *scratch;
    void *ready = aligned_alloc(64, (o->bytes + 63) / 64 * 64);
    if (!ready || axon_onednn_thread(p->scratchpad, &st, &scratch) != 0) {
        free(ready);
        return NULL;
    }
    dnnl_memory_t from = co_memory(&o->user, (void *)w), to = co_memory(&o->prim, ready), pad = NULL;
    dnnl_memory_desc_t md;
    dnnl_dims_t d = {(dnnl_dim_t)p->scratchpad};
    int ok = from && to;
    if (ok && p->scratchpad > 0)
        ok = dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_u8, dnnl_a) == dnnl_success &&
             (pad = co_memory(&md, scratch)) != NULL;
    ok = ok && co_reorder_run(o->reorder, st, from, to, pad) == 0;
    if (from) dnnl_memory_destroy(from);
    if (to) dnnl_memory_destroy(to);
    if (pad) dnnl_memory_destroy(pad);
    if (!ok) {
        free(ready);
        return NULL;
    }
    return ready;
}

int conv_onednn_phase(const conv_args_t *a, const axon_exec_t *ex, int phase) {
    const conv_geom_t *g = &a->g;
    const int nparts = axon_pool_size(ex->pool);
    /* bfloat16 forwards too (float32 sums, rounded once, as the column path): 8 images of 64-256 channels, 3x3,
     * 11.2-15.0 ms against the columns' 16.7-17.7 (an A/B through AXON_CONV, 12:28 UTC); its input gradient
     * (jit_bf16) was no faster than the columns, 10.9-13.9 against 11.1-12.7 ms. oneDNN 2.6 has no float16
     * convolution for CPUs. */
    const int bf16_fwd = a->dt == AXON_BFLOAT16 && phase == CONV_ONEDNN_FORWARD;
    if ((a->dt != AXON_FLOAT32 && !bf16_fwd) || co_disabled() || !axon_onednn_available()) return 0;
    int identity = g->ksp == 1; /* 1x1, stride 1, no padding: a plain GEMM on the column path */
    for (int i = 0; i < 3; i++) identity = identity && g->stride[i] == 1 && g->pad[i] == 0 && g->xs[i] == g->ys[i];
    if (identity && !a->nhwc) return 0;
    /* The input gradient of a layer with few input channels per group (an image's 3 colours) is 3x slower on
     * oneDNN's kernels than on the columns: ResNet's 7x7 stem, 8 images of 224^2, 41.8 against 13.2 ms (torch CPU
     * 48.4); 32 images of 3 x 32^2 with a 3x3 kernel 1.02 against 0.59 ms. Its forward and weight gradient are 2x
     * faster on oneDNN. */
    if (phase == CONV_ONEDNN_BACKWARD_DATA && g->cxg < 16) return 0;
    co_job_t j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.failed, 0);
    j.a = a, j.phase = phase, j.nparts = nparts;
    j.lo = g->batch / nparts, j.extra = g->batch % nparts;
    int64_t sizes[2] = {j.lo, j.lo + 1}; /* of the two plans: images, or channels */
    int nplans = j.extra ? 2 : 1;
    if (g->batch < nparts) {
        /* Fewer images than threads: without groups, the channels of the tensor the phase writes (Y's for the
         * weight gradient, whose rows are Y's channels) split in blocks of oneDNN's 16; else the column path,
         * which splits an image's positions. */
        j.split = phase == CONV_ONEDNN_BACKWARD_DATA ? CO_BY_X_CHANNELS : CO_BY_Y_CHANNELS;
        const int64_t total = j.split == CO_BY_X_CHANNELS ? g->cx : g->cy, blocks = (total + 15) / 16;
        if (g->groups != 1 || blocks < nparts) return 0;
        j.cpart = (blocks + nparts - 1) / nparts * 16;
        sizes[0] = j.cpart, sizes[1] = total - (total - 1) / j.cpart * j.cpart;
        nplans = sizes[1] != sizes[0] ? 2 : 1;
    }
    const int has_bias = phase == CONV_ONEDNN_FORWARD && a->bias_y != NULL;
    axon_onednn_entry_t *e[2] = {NULL, NULL};
    int done = 0;
    for (int v = 0; v < nplans; v++) {
        co_key_t k;
        const int64_t nb = j.split ? g->batch : sizes[v];
        const int64_t cx = j.split == CO_BY_X_CHANNELS ? sizes[v] : g->cx;
        const int64_t cy = j.split == CO_BY_Y_CHANNELS ? sizes[v] : g->cy;
        if (co_key_make(a, phase, has_bias, nb, cx, cy, &k) != 0 ||
            (e[v] = axon_onednn_acquire(&k, sizeof k, co_plan_create, co_plan_free)) == NULL ||
            (j.plan[v] = axon_onednn_object(e[v])) == NULL)
            goto out;
    }
    const co_operand_t *w0 = &j.plan[0]->op[CO_W];
    if (phase != CONV_ONEDNN_BACKWARD_WEIGHTS && !j.split && w0->reorder &&
        (!j.plan[1] || dnnl_memory_desc_equal(&w0->prim, &j.plan[1]->op[CO_W].prim)) &&
        (j.w_ready = co_weight_ready(j.plan[0], a->w)) == NULL)
        goto out;
    if (phase == CONV_ONEDNN_BACKWARD_WEIGHTS && !j.split && nparts > 1 &&
        (j.partials = malloc((size_t)(nparts - 1) * (size_t)(g->cy * g->rows) * sizeof(float))) == NULL)
        goto out;
    axon_parallel_for(ex->pool, 0, nparts, 1, co_part, &j);
    if (atomic_load(&j.failed)) { /* a failed primitive is not offered again; a lack of memory is not its fault */
        for (int v = 0; v < 2 && atomic_load(&j.failed) == 1; v++)
            if (e[v]) axon_onednn_mark_broken(e[v]);
        goto out;
    }
    if (j.partials) axon_parallel_for(ex->pool, 0, g->cy * g->rows, AXON_KERNEL_GRAIN, co_weight_sum, &j);
    done = 1;
out:
    for (int v = 0; v < 2; v++)
        if (e[v]) axon_onednn_release(e[v]);
    free(j.w_ready);
    free(j.partials);
    return done;
}

#else

int conv_onednn_phase(const conv_args_t *a, const axon_exec_t *ex, int phase) { return 0; }

#endif
