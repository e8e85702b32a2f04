/* Fused LSTM and GRU cells (axon/rnn.h).
 *
 * One argument block serves all four kernels: up to RNN_MAX operands, each a row-major [B, width] matrix (width a
 * multiple of H) or a 1-D bias broadcast over rows. A row of every operand is loaded into double buffers on the
 * stack in pieces of RNN_CHUNK hidden units, computed, and stored. */
#include <math.h>
#include <string.h>

#include "axon/rnn.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

#define RNN_MAX 8
#define RNN_CHUNK 128            /* hidden units per piece: 8 operands x 5 gates x 128 doubles = 40 KiB of stack */

enum rnn_kind { RNN_LSTM, RNN_LSTM_BACKWARD, RNN_GRU, RNN_GRU_BACKWARD };

typedef struct rnn_operand {
    char *data;                  /* NULL: absent (zero) */
    int64_t row_stride;          /* elements between rows; 0 for a bias */
    size_t es;
    axon_convert_fn load, store;
} rnn_operand_t;

typedef struct rnn_args {
    int kind;
    int64_t rows, hidden;
    rnn_operand_t op[RNN_MAX];
} rnn_args_t;

/* The operands' slots, per kind (outputs first). */
enum { L_HY, L_CY, L_WS, L_IG, L_HG, L_CX, L_IB, L_HB };                    /* LSTM */
enum { LB_GG, LB_GCX, LB_GHY, LB_GCY, LB_CX, LB_CY, LB_WS };                /* LSTM backward */
enum { G_HY, G_WS, G_IG, G_HG, G_HX, G_IB, G_HB };                          /* GRU */
enum { GB_GIG, GB_GHG, GB_GHX, GB_GHY, GB_WS };                             /* GRU backward */

#ifdef AXON_HAVE_LIBMVEC
/* libmvec's vector exp and tanh (kernels/pointwise_unary.c says why), so that the gates' loops vectorize: with the
 * scalar calls an LSTM cell of [256, 4 x 256] float32 gates took 2 ms, most of torch CPU's whole step. */
double exp(double) __attribute__((simd("notinbranch")));
double tanh(double) __attribute__((simd("notinbranch")));
#endif

static inline double rnn_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Load gate `gate` (of width-H blocks) of row r, units [u, u + m), into buf; zeros for an absent operand. */
static void rnn_load(const rnn_operand_t *o, int64_t r, int64_t hidden, int gate, int64_t u, int64_t m, double *buf) {
    if (o->data == NULL) {
        memset(buf, 0, sizeof(double) * (size_t)m);
        return;
    }
    const char *p = o->data + ((r * o->row_stride) + gate * hidden + u) * (int64_t)o->es;
    o->load((char *)buf, 1, p, 1, m);
}

static void rnn_store(const rnn_operand_t *o, int64_t r, int64_t hidden, int gate, int64_t u, int64_t m,
                      const double *buf) {
    if (o->data == NULL) return;
    char *p = o->data + ((r * o->row_stride) + gate * hidden + u) * (int64_t)o->es;
    o->store(p, 1, (const char *)buf, 1, m);
}

AXON_CLONES static void rnn_lstm_piece(const rnn_args_t *a, int64_t r, int64_t u, int64_t m) {
    const int64_t H = a->hidden;
    double g[4][RNN_CHUNK], t[RNN_CHUNK], cx[RNN_CHUNK], cy[RNN_CHUNK], hy[RNN_CHUNK];
    for (int k = 0; k < 4; k++) {
        rnn_load(&a->op[L_IG], r, H, k, u, m, g[k]);
        rnn_load(&a->op[L_HG], r, H, k, u, m, t);
        for (int64_t j = 0; j < m; j++) g[k][j] += t[j];
        if (a->op[L_IB].data) {
            rnn_load(&a->op[L_IB], 0, H, k, u, m, t);
            for (int64_t j = 0; j < m; j++) g[k][j] += t[j];
            rnn_load(&a->op[L_HB], 0, H, k, u, m, t);
            for (int64_t j = 0; j < m; j++) g[k][j] += t[j];
        }
        if (k == 2)
            for (int64_t j = 0; j < m; j++) g[k][j] = tanh(g[k][j]);
        else
            for (int64_t j = 0; j < m; j++) g[k][j] = rnn_sigmoid(g[k][j]);
        rnn_store(&a->op[L_WS], r, H, k, u, m, g[k]);
    }
    rnn_load(&a->op[L_CX], r, H, 0, u, m, cx);
    for (int64_t j = 0; j < m; j++) {
        cy[j] = g[1][j] * cx[j] + g[0][j] * g[2][j];
        hy[j] = g[3][j] * tanh(cy[j]);
    }
    rnn_store(&a->op[L_CY], r, H, 0, u, m, cy);
    rnn_store(&a->op[L_HY], r, H, 0, u, m, hy);
}

AXON_CLONES static void rnn_lstm_backward_piece(const rnn_args_t *a, int64_t r, int64_t u, int64_t m) {
    const int64_t H = a->hidden;
    double w[4][RNN_CHUNK], ghy[RNN_CHUNK], gcy[RNN_CHUNK], cx[RNN_CHUNK], cy[RNN_CHUNK], out[RNN_CHUNK];
    for (int k = 0; k < 4; k++) rnn_load(&a->op[LB_WS], r, H, k, u, m, w[k]);
    rnn_load(&a->op[LB_GHY], r, H, 0, u, m, ghy);
    rnn_load(&a->op[LB_GCY], r, H, 0, u, m, gcy);
    rnn_load(&a->op[LB_CX], r, H, 0, u, m, cx);
    rnn_load(&a->op[LB_CY], r, H, 0, u, m, cy);
    for (int64_t j = 0; j < m; j++) {
        const double i = w[0][j], f = w[1][j], g = w[2][j], o = w[3][j], t = tanh(cy[j]);
        const double gc = gcy[j] + ghy[j] * o * (1.0 - t * t);
        w[0][j] = gc * g * i * (1.0 - i);
        w[1][j] = gc * cx[j] * f * (1.0 - f);
        w[2][j] = gc * i * (1.0 - g * g);
        w[3][j] = ghy[j] * t * o * (1.0 - o);
        out[j] = gc * f;
    }
    for (int k = 0; k < 4; k++) rnn_store(&a->op[LB_GG], r, H, k, u, m, w[k]);
    rnn_store(&a->op[LB_GCX], r, H, 0, u, m, out);
}

AXON_CLONES static void rnn_gru_piece(const rnn_args_t *a, int64_t r, int64_t u, int64_t m) {
    const int64_t H = a->hidden;
    double ig[3][RNN_CHUNK], hg[3][RNN_CHUNK], hx[RNN_CHUNK], hy[RNN_CHUNK];
    for (int k = 0; k < 3; k++) {
        rnn_load(&a->op[G_IG], r, H, k, u, m, ig[k]);
        rnn_load(&a->op[G_HG], r, H, k, u, m, hg[k]);
        if (a->op[G_IB].data) {
            rnn_load(&a->op[G_IB], 0, H, k, u, m, hy);
            for (int64_t j = 0; j < m; j++) ig[k][j] += hy[j];
            rnn_load(&a->op[G_HB], 0, H, k, u, m, hy);
            for (int64_t j = 0; j < m; j++) hg[k][j] += hy[j];
        }
    }
    rnn_load(&a->op[G_HX], r, H, 0, u, m, hx);
    for (int64_t j = 0; j < m; j++) {
        const double rg = rnn_sigmoid(ig[0][j] + hg[0][j]), z = rnn_sigmoid(ig[1][j] + hg[1][j]);
        const double n = tanh(ig[2][j] + rg * hg[2][j]);
        hy[j] = n + z * (hx[j] - n);
        ig[0][j] = rg, ig[1][j] = z, ig[2][j] = n;   /* the workspace's first three gates */
    }
    for (int k = 0; k < 3; k++) rnn_store(&a->op[G_WS], r, H, k, u, m, ig[k]);
    rnn_store(&a->op[G_WS], r, H, 3, u, m, hx);
    rnn_store(&a->op[G_WS], r, H, 4, u, m, hg[2]);
    rnn_store(&a->op[G_HY], r, H, 0, u, m, hy);
}

AXON_CLONES static void rnn_gru_backward_piece(const rnn_args_t *a, int64_t r, int64_t u, int64_t m) {
    const int64_t H = a->hidden;
    double w[5][RNN_CHUNK], g[RNN_CHUNK], gi[3][RNN_CHUNK], ghn[RNN_CHUNK], ghx[RNN_CHUNK];
    for (int k = 0; k < 5; k++) rnn_load(&a->op[GB_WS], r, H, k, u, m, w[k]);
    rnn_load(&a->op[GB_GHY], r, H, 0, u, m, g);
    for (int64_t j = 0; j < m; j++) {
        const double rg = w[0][j], z = w[1][j], n = w[2][j], hx = w[3][j], hn = w[4][j];
        const double gn = g[j] * (1.0 - z) * (1.0 - n * n);
        ghx[j] = g[j] * z;
        gi[1][j] = g[j] * (hx - n) * z * (1.0 - z);
        gi[2][j] = gn;
        gi[0][j] = gn * hn * rg * (1.0 - rg);
        ghn[j] = gn * rg;
    }
    for (int k = 0; k < 3; k++) rnn_store(&a->op[GB_GIG], r, H, k, u, m, gi[k]);
    rnn_store(&a->op[GB_GHG], r, H, 0, u, m, gi[0]);
    rnn_store(&a->op[GB_GHG], r, H, 1, u, m, gi[1]);
    rnn_store(&a->op[GB_GHG], r, H, 2, u, m, ghn);
    rnn_store(&a->op[GB_GHX], r, H, 0, u, m, ghx);
}

static void rnn_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const rnn_args_t *a = ctx;
    for (int64_t r = begin; r < end; r++) {
        for (int64_t u = 0; u < a->hidden; u += RNN_CHUNK) {
            const int64_t m = a->hidden - u < RNN_CHUNK ? a->hidden - u : RNN_CHUNK;
            switch (a->kind) {
            case RNN_LSTM: rnn_lstm_piece(a, r, u, m); break;
            case RNN_LSTM_BACKWARD: rnn_lstm_backward_piece(a, r, u, m); break;
            case RNN_GRU: rnn_gru_piece(a, r, u, m); break;
            default: rnn_gru_backward_piece(a, r, u, m); break;
            }
        }
    }
}

static axon_status_t rnn_kernel(const void *args, const axon_exec_t *ex) {
    const rnn_args_t *a = args;
    int64_t grain = AXON_KERNEL_GRAIN / (a->hidden * 8) + 1;
    axon_parallel_for(ex->pool, 0, a->rows, grain, rnn_rows, (void *)a);
    return AXON_OK;
}

/* One operand spec for the checks: its slot, role name, gate count (width = gates * H; 0 for a 1-D bias of
 * `gates` * H elements, given in bias_gates), whether it is written, whether it may be NULL. */
typedef struct rnn_spec {
    const char *role;
    const axon_tensor_t *t;
    int gates;
    int bias;
    int dst;
    int optional;
} rnn_spec_t;

static axon_status_t rnn_launch(axon_stream_t s, const char *name, int kind, const rnn_spec_t *specs, int n,
                                int64_t rows, int64_t hidden) {
    rnn_args_t a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.rows = rows;
    a.hidden = hidden;
    for (int k = 0; k < n; k++) {
        const rnn_spec_t *sp = &specs[k];
        if (sp->t == NULL) {
            if (!sp->optional) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is NULL", name, sp->role);
            continue;
        }
        axon_status_t st = axon_kernel_check_operand(sp->t, name, sp->role, sp->dst);
        if (st != AXON_OK) return st;
        if (!axon_dtype_is_floating(sp->t->dtype))
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16",
                             name, sp->role, axon_dtype_name(sp->t->dtype));
        char got[64];
        axon_shape_format(sp->t, got, sizeof got);
        const int64_t width = sp->gates * hidden;
        int ok = sp->bias ? sp->t->ndim == 1 && sp->t->sizes[0] == width
                          : sp->t->ndim == 2 && sp->t->sizes[0] == rows && sp->t->sizes[1] == width;
        if (!ok && sp->bias)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s, expected [%lld]", name, sp->role, got,
                             (long long)width);
        if (!ok)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s, expected [%lld, %lld]", name, sp->role,
                             got, (long long)rows, (long long)width);
        if (!axon_tensor_is_contiguous(sp->t))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous", name, sp->role);
        rnn_operand_t *o = &a.op[k];
        o->data = sp->t->data;
        o->row_stride = sp->bias ? 0 : width;
        o->es = axon_dtype_size(sp->t->dtype);
        o->load = axon_convert_get(sp->t->dtype, AXON_FLOAT64);
        o->store = axon_convert_get(AXON_FLOAT64, sp->t->dtype);
    }
    if (rows == 0 || hidden == 0) return AXON_OK;
    axon_launch_t l = {rnn_kernel, &a, sizeof a, name, 0};
    return axon_stream_launch(s, &l);
}

/* Rows and hidden size from a [B, gates * H] tensor. */
static axon_status_t rnn_dims(const char *name, const axon_tensor_t *t, int gates, int64_t *rows, int64_t *hidden) {
    axon_status_t st = axon_kernel_check_operand(t, name, "gates", 0);
    if (st != AXON_OK) return st;
    if (t->ndim != 2 || t->sizes[1] % gates != 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: gates must be [B, %d * hidden], got %d dims", name, gates,
                         t->ndim);
    *rows = t->sizes[0];
    *hidden = t->sizes[1] / gates;
    return AXON_OK;
}

axon_status_t axon_kernel_lstm_cell(axon_stream_t s, const axon_tensor_t *hy, const axon_tensor_t *cy,
                                    const axon_tensor_t *workspace, const axon_tensor_t *input_gates,
                                    const axon_tensor_t *hidden_gates, const axon_tensor_t *cx,
                                    const axon_tensor_t *input_bias, const axon_tensor_t *hidden_bias) {
    int64_t rows = 0, hidden = 0;
    axon_status_t st = rnn_dims("lstm_cell", input_gates, 4, &rows, &hidden);
    if (st != AXON_OK) return st;
    if ((input_bias == NULL) != (hidden_bias == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "lstm_cell: give both biases or neither");
    const rnn_spec_t specs[] = {
        {"hy", hy, 1, 0, 1, 0},           {"cy", cy, 1, 0, 1, 0},           {"workspace", workspace, 4, 0, 1, 0},
        {"input_gates", input_gates, 4, 0, 0, 0}, {"hidden_gates", hidden_gates, 4, 0, 0, 0}, {"cx", cx, 1, 0, 0, 0},
        {"input_bias", input_bias, 4, 1, 0, 1},   {"hidden_bias", hidden_bias, 4, 1, 0, 1},
    };
    return rnn_launch(s, "lstm_cell", RNN_LSTM, specs, 8, rows, hidden);
}

axon_status_t axon_kernel_lstm_cell_backward(axon_stream_t s, const axon_tensor_t *grad_gates,
                                             const axon_tensor_t *grad_cx, const axon_tensor_t *grad_hy,
                                             const axon_tensor_t *grad_cy, const axon_tensor_t *cx,
                                             const axon_tensor_t *cy, const axon_tensor_t *workspace) {
    int64_t rows = 0, hidden = 0;
    axon_status_t st = rnn_dims("lstm_cell_backward", workspace, 4, &rows, &hidden);
    if (st != AXON_OK) return st;
    const rnn_spec_t specs[] = {
        {"grad_gates", grad_gates, 4, 0, 1, 0}, {"grad_cx", grad_cx, 1, 0, 1, 0}, {"grad_hy", grad_hy, 1, 0, 0, 1},
        {"grad_cy", grad_cy, 1, 0, 0, 1},       {"cx", cx, 1, 0, 0, 0},           {"cy", cy, 1, 0, 0, 0},
        {"workspace", workspace, 4, 0, 0, 0},
    };
    return rnn_launch(s, "lstm_cell_backward", RNN_LSTM_BACKWARD, specs, 7, rows, hidden);
}

axon_status_t axon_kernel_gru_cell(axon_stream_t s, const axon_tensor_t *hy, const axon_tensor_t *workspace,
                                   const axon_tensor_t *input_gates, const axon_tensor_t *hidden_gates,
                                   const axon_tensor_t *hx, const axon_tensor_t *input_bias,
                                   const axon_tensor_t *hidden_bias) {
    int64_t rows = 0, hidden = 0;
    axon_status_t st = rnn_dims("gru_cell", input_gates, 3, &rows, &hidden);
    if (st != AXON_OK) return st;
    if ((input_bias == NULL) != (hidden_bias == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "gru_cell: give both biases or neither");
    const rnn_spec_t specs[] = {
        {"hy", hy, 1, 0, 1, 0},                   {"workspace", workspace, 5, 0, 1, 0},
        {"input_gates", input_gates, 3, 0, 0, 0}, {"hidden_gates", hidden_gates, 3, 0, 0, 0},
        {"hx", hx, 1, 0, 0, 0},                   {"input_bias", input_bias, 3, 1, 0, 1},
        {"hidden_bias", hidden_bias, 3, 1, 0, 1},
    };
    return rnn_launch(s, "gru_cell", RNN_GRU, specs, 7, rows, hidden);
}

axon_status_t axon_kernel_gru_cell_backward(axon_stream_t s, const axon_tensor_t *grad_input_gates,
                                            const axon_tensor_t *grad_hidden_gates, const axon_tensor_t *grad_hx,
                                            const axon_tensor_t *grad_hy, const axon_tensor_t *workspace) {
    int64_t rows = 0, hidden = 0;
    axon_status_t st = rnn_dims("gru_cell_backward", workspace, 5, &rows, &hidden);
    if (st != AXON_OK) return st;
    const rnn_spec_t specs[] = {
        {"grad_input_gates", grad_input_gates, 3, 0, 1, 0}, {"grad_hidden_gates", grad_hidden_gates, 3, 0, 1, 0},
        {"grad_hx", grad_hx, 1, 0, 1, 0}, {"grad_hy", grad_hy, 1, 0, 0, 0}, {"workspace", workspace, 5, 0, 0, 0},
    };
    return rnn_launch(s, "gru_cell_backward", RNN_GRU_BACKWARD, specs, 5, rows, hidden);
}
