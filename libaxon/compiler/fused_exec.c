/* The tile interpreter: one command per fused group. The group's elements (row-major over the output shape) are cut
 * into tiles of FUSED_TILE; tiles run in parallel over the device's pool, and each participant keeps its registers on
 * its own stack, so intermediates never touch memory. Each tile: load the inputs (converting, following strides and
 * broadcasts), run the instructions, store the outputs. An element's value depends only on its inputs, never on the
 * tile or thread it fell in. */
#include <string.h>

#include "axon/stream.h"
#include "fused_impl.h"

typedef struct fused_args {
    const fused_prog_t *fp;
    int ndim;
    int64_t sizes[AXON_MAX_DIMS];
    int64_t numel;
    axon_tensor_t in[FUSED_MAX_INPUTS];    /* broadcast to the group's shape */
    axon_tensor_t out[FUSED_MAX_OUTPUTS];
} fused_args_t;

/* Moves elements [i0, i0 + n) of t (row-major order over the group's shape) to (load) or from (store) a register,
 * one run along the innermost dimension at a time. */
static void fused_move(const fused_args_t *a, const axon_tensor_t *t, axon_convert_fn cv, char *reg, size_t ws,
                       int64_t i0, int64_t n, int store) {
    const int nd = a->ndim;
    const size_t es = axon_dtype_size(t->dtype);
    if (nd == 0) {
        if (store) cv((char *)t->data, 1, reg, 1, 1);
        else cv(reg, 1, (const char *)t->data, 0, n);
        return;
    }
    int64_t idx[AXON_MAX_DIMS], rem = i0;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % a->sizes[d];
        rem /= a->sizes[d];
    }
    const int64_t inner = a->sizes[nd - 1], stride = t->strides[nd - 1];
    for (int64_t done = 0; done < n;) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++) off += idx[d] * t->strides[d];
        int64_t seg = inner - idx[nd - 1];
        if (seg > n - done) seg = n - done;
        char *p = (char *)t->data + off * (int64_t)es;
        if (store) cv(p, stride, reg + done * (int64_t)ws, 1, seg);
        else cv(reg + done * (int64_t)ws, 1, p, stride, seg);
        done += seg;
        idx[nd - 1] += seg;
        for (int d = nd - 1; d > 0 && idx[d] == a->sizes[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

static void fused_range(void *ctx, int64_t t0, int64_t t1, int slot) {
    (void)slot;
    const fused_args_t *a = ctx;
    const fused_prog_t *fp = a->fp;
    const size_t ws = axon_dtype_size(fp->work);
    _Alignas(64) char regs[FUSED_MAX_REGS][FUSED_TILE * sizeof(double)];
    _Alignas(64) char tmp[FUSED_TILE * sizeof(double)];
    for (int64_t t = t0; t < t1; t++) {
        const int64_t i0 = t * FUSED_TILE;
        const int64_t n = a->numel - i0 < FUSED_TILE ? a->numel - i0 : FUSED_TILE;
        for (int k = 0; k < fp->num_inputs; k++) fused_move(a, &a->in[k], fp->load[k], regs[k], ws, i0, n, 0);
        for (int i = 0; i < fp->num_insns; i++) {
            const fused_insn_t *in = &fp->insns[i];
            if (in->loop) {
                const char *ins[3] = {NULL, NULL, NULL};
                for (int k = 0; k < in->arity; k++) ins[k] = regs[in->in[k]];
                in->loop(regs[in->out], ins, 0u, n, &in->ctx);
                continue;
            }
            memcpy(regs[in->out], regs[in->in[0]], (size_t)n * ws);
            if (in->round_to != AXON_DTYPE_COUNT) {
                in->round_down(tmp, 1, regs[in->out], 1, n);
                in->round_up(regs[in->out], 1, tmp, 1, n);
            }
        }
        for (int r = 0; r < fp->num_outputs; r++)
            fused_move(a, &a->out[r], fp->store[r], regs[fp->out_reg[r]], ws, i0, n, 1);
    }
}

static axon_status_t fused_kernel(const void *args, const axon_exec_t *ex) {
    const fused_args_t *a = args;
    const int64_t tiles = (a->numel + FUSED_TILE - 1) / FUSED_TILE;
    axon_parallel_for(ex->pool, 0, tiles, 16, fused_range, (void *)a);
    return AXON_OK;
}

axon_status_t fused_launch(axon_stream_t s, const struct fused_prog *fp, int num_inputs, const axon_tensor_t *inputs,
                           int num_outputs, const axon_tensor_t *outputs) {
    if (num_inputs != fp->num_inputs || num_outputs != fp->num_outputs || num_outputs < 1)
        return axon_fail(AXON_ERROR_INTERNAL, "fused: %d inputs and %d outputs for a group of %d and %d", num_inputs,
                         num_outputs, fp->num_inputs, fp->num_outputs);
    fused_args_t a;
    memset(&a, 0, sizeof a);
    a.fp = fp;
    a.ndim = outputs[0].ndim;
    a.numel = 1;
    for (int d = 0; d < a.ndim; d++) {
        a.sizes[d] = outputs[0].sizes[d];
        a.numel *= a.sizes[d];
    }
    for (int r = 0; r < num_outputs; r++) {
        int same = outputs[r].ndim == a.ndim;
        for (int d = 0; same && d < a.ndim; d++) same = outputs[r].sizes[d] == a.sizes[d];
        if (!same) return axon_fail(AXON_ERROR_INVALID_ARG, "fused: output %d's shape differs from output 0's", r);
        a.out[r] = outputs[r];
    }
    for (int k = 0; k < num_inputs; k++) {
        if (inputs[k].ndim > a.ndim)
            return axon_fail(AXON_ERROR_INVALID_ARG, "fused: input %d has more dimensions than the group", k);
        prog_broadcast(&inputs[k], a.ndim, a.sizes, &a.in[k]);
    }
    if (a.numel == 0) return AXON_OK;
    axon_launch_t l = {fused_kernel, &a, sizeof a, "fused", 0};
    return axon_stream_launch(s, &l);
}
