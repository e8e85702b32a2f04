/* axon/attention.h against a naive long double reference (softmax(scale * Q K^T + mask) V and its gradients): every
 * float dtype, shapes that cross the 64-row/key tiles, causal with L < S and L > S, float and bool masks with
 * broadcasting and fully masked rows, GQA, dropout (the documented Philox decisions, same seed -> same bytes, 1 and
 * 3 threads bitwise identical: the one-pass and two-pass backward agree), a strided q, HF's layouts (heads in
 * [B, L, H, D] memory, a float padding mask expanded through a stride of 0), decoding steps and the float32 forward
 * on AVX-512 register tiles; bad input refused
 * with messages.
 *
 * Tolerance: |got - ref| <= tol * (1 + |ref|), tol 1e-10 (float64), 5e-5 (float32, computed in float32), 4e-3
 * (float16) and 3e-2 (bfloat16), which hold the output's rounding plus float32 sums over a few hundred terms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../kernels/philox.h"
#include "axon/attention.h"
#include "reduce_ref.h"

static const axon_dtype_t at_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};

static long double at_tol(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return 1e-10L;
    case AXON_FLOAT32: return 5e-5L;
    case AXON_FLOAT16: return 4e-3L;
    default: return 3e-2L;
    }
}

/* A host buffer of n elements of d (random in [-amp, amp), or zeros) and its device copy. */
typedef struct tb {
    axon_dtype_t d;
    int64_t n;
    void *h, *dev;
} tb_t;

static tb_t tb_make(const kc_dev_t *k, axon_dtype_t d, int64_t n, double amp) {
    tb_t b = {d, n, calloc((size_t)(n > 0 ? n : 1), axon_dtype_size(d)), NULL};
    for (int64_t i = 0; i < n && amp > 0; i++) rr_set(d, b.h, i, amp * ((long double)rr_rand() / 2147483648.0L - 1));
    b.dev = kc_upload(k, b.h, (size_t)(n > 0 ? n : 1) * axon_dtype_size(d));
    return b;
}

/* -inf written as bits: the reference encoder is for finite values. */
static void set_minus_inf(tb_t *b, int64_t i) {
    char *p = (char *)b->h + i * (int64_t)axon_dtype_size(b->d);
    const uint16_t half = b->d == AXON_FLOAT16 ? 0xFC00 : 0xFF80;
    if (b->d == AXON_FLOAT32) *(float *)(void *)p = -INFINITY;
    else if (b->d == AXON_FLOAT64) *(double *)(void *)p = -INFINITY;
    else memcpy(p, &half, 2);
}

static long double tb_get(const tb_t *b, int64_t i) { return rr_get(b->d, b->h, i); }

static int tb_pull(const kc_dev_t *k, tb_t *b) {
    return kc_download(k, b->h, b->dev, (size_t)b->n * axon_dtype_size(b->d));
}

static void tb_free(const kc_dev_t *k, tb_t *b) {
    free(b->h);
    axon_mem_free(k->dev, b->dev);
}

/* One attention problem. mask: none (0), float [L, S] with -inf entries and a fully masked row (1), bool
 * [B, 1, 1, S] (2), float [B, 1, 1, S] with -inf entries seen as [B, 1, L, S] through a stride of 0 (3, BERT's
 * expanded padding mask). blhe: every 4-d tensor in [B, L, H, D] memory seen as [B, H, L, D] (heads split off by
 * view + transpose, as HF models pass them). */
typedef struct prob {
    axon_dtype_t d;
    int64_t B, Hq, Hkv, L, S, E, Ev;
    int causal, mask;
    double p;
    int blhe;
} prob_t;

static int64_t ix4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t nb, int64_t nc, int64_t nd) {
    return ((a * nb + b) * nc + c) * nd + d;
}

/* Where element [a, b, c, d] of a [., nb, nc, nd] tensor of pr lies in its buffer. */
static int64_t pix(const prob_t *pr, int64_t a, int64_t b, int64_t c, int64_t d, int64_t nb, int64_t nc, int64_t nd) {
    return pr->blhe ? ((a * nc + c) * nb + b) * nd + d : ix4(a, b, c, d, nb, nc, nd);
}

/* The descriptor of a [n0, n1, n2, n3] tensor of pr. */
static axon_tensor_t ptensor(const prob_t *pr, void *data, axon_dtype_t d, const int64_t *n) {
    const int64_t blhe[4] = {n[2] * n[1] * n[3], n[3], n[1] * n[3], 1};
    return kc_tensor(data, d, 4, n, pr->blhe ? blhe : NULL);
}

/* Mask value (added to the score) of (b, i, j), or -inf. */
static long double ref_mask(const prob_t *pr, const tb_t *m, int64_t b, int64_t i, int64_t j) {
    if (pr->mask == 1) return tb_get(m, i * pr->S + j);
    if (pr->mask == 2) return tb_get(m, b * pr->S + j) != 0 ? 0.0L : -INFINITY;
    if (pr->mask == 3) return tb_get(m, b * pr->S + j);
    return 0;
}

static int ref_keep(const prob_t *pr, uint64_t seed, uint64_t off, int64_t n) {
    uint32_t x[4];
    axon_philox_block(seed, off, (uint64_t)n / 4, x);
    return (double)(x[n % 4] >> 8) * 0x1p-24 >= pr->p;
}

/* Runs forward and backward on the device and compares with the reference. Returns the number of mismatches. */
static int check_problem(const kc_dev_t *k, const prob_t *pr) {
    const int64_t B = pr->B, Hq = pr->Hq, Hkv = pr->Hkv, L = pr->L, S = pr->S, E = pr->E, Ev = pr->Ev;
    const int64_t g = Hq / Hkv;
    const axon_dtype_t d = pr->d;
    tb_t q = tb_make(k, d, B * Hq * L * E, 1.5), kk = tb_make(k, d, B * Hkv * S * E, 1.5),
         v = tb_make(k, d, B * Hkv * S * Ev, 1.0), dout = tb_make(k, d, B * Hq * L * Ev, 1.0);
    tb_t out = tb_make(k, d, B * Hq * L * Ev, 0), lse = tb_make(k, d == AXON_FLOAT64 ? AXON_FLOAT64 : AXON_FLOAT32, B * Hq * L, 0);
    tb_t dq = tb_make(k, d, q.n, 0), dk = tb_make(k, d, kk.n, 0), dv = tb_make(k, d, v.n, 0);
    tb_t m = {AXON_FLOAT32, 0, NULL, NULL};
    const int64_t sq[4] = {B, Hq, L, E}, sk[4] = {B, Hkv, S, E}, sv[4] = {B, Hkv, S, Ev}, so[4] = {B, Hq, L, Ev};
    axon_tensor_t tq = ptensor(pr, q.dev, d, sq), tk = ptensor(pr, kk.dev, d, sk), tv = ptensor(pr, v.dev, d, sv),
                  to = ptensor(pr, out.dev, d, so), tl = kc_tensor(lse.dev, lse.d, 3, so, NULL),
                  tg = ptensor(pr, dout.dev, d, so), tdq = ptensor(pr, dq.dev, d, sq), tdk = ptensor(pr, dk.dev, d, sk),
                  tdv = ptensor(pr, dv.dev, d, sv), tm;
    if (pr->mask == 1) {
        m = tb_make(k, d, L * S, 2.0);
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++)
                if ((i * 7 + j * 3) % 5 == 0 || i == L / 2) set_minus_inf(&m, i * S + j);
        axon_memcpy(m.dev, m.h, (size_t)m.n * axon_dtype_size(d), AXON_COPY_HOST_TO_DEVICE, k->s);
        const int64_t ms[2] = {L, S};
        tm = kc_tensor(m.dev, d, 2, ms, NULL);
    } else if (pr->mask == 2) {
        m = tb_make(k, AXON_BOOL, B * S, 0);
        for (int64_t i = 0; i < B * S; i++) ((uint8_t *)m.h)[i] = (i % 3) != 1;
        axon_memcpy(m.dev, m.h, (size_t)m.n, AXON_COPY_HOST_TO_DEVICE, k->s);
        const int64_t ms[4] = {B, 1, 1, S};
        tm = kc_tensor(m.dev, AXON_BOOL, 4, ms, NULL);
    } else if (pr->mask == 3) {
        m = tb_make(k, d, B * S, 2.0);
        for (int64_t i = 0; i < B * S; i++)
            if (i % 7 == 3) set_minus_inf(&m, i);
        axon_memcpy(m.dev, m.h, (size_t)m.n * axon_dtype_size(d), AXON_COPY_HOST_TO_DEVICE, k->s);
        const int64_t ms[4] = {B, 1, L, S}, mst[4] = {S, 0, 0, 1};
        tm = kc_tensor(m.dev, d, 4, ms, mst);
    }
    axon_attention_params_t p = {0.37, pr->causal, pr->p, 1234, 77, NULL, NULL};
    const axon_tensor_t *mp = pr->mask ? &tm : NULL;
    int bad = 0;
    if (axon_kernel_attention(k->s, &to, &tl, &tq, &tk, &tv, mp, &p) != AXON_OK ||
        axon_kernel_attention_backward(k->s, &tdq, &tdk, &tdv, &tg, &tq, &tk, &tv, mp, &to, &tl, &p) != AXON_OK ||
        !tb_pull(k, &out) || !tb_pull(k, &lse) || !tb_pull(k, &dq) || !tb_pull(k, &dk) || !tb_pull(k, &dv)) {
        fprintf(stderr, "launch failed: %s\n", axon_last_error());
        bad = 1;
        goto done;
    }
    long double *P = calloc((size_t)S, sizeof *P), *Z = calloc((size_t)S, sizeof *Z), *dP = calloc((size_t)S, sizeof *dP);
    long double *rdk = calloc((size_t)kk.n, sizeof *rdk), *rdv = calloc((size_t)v.n, sizeof *rdv);
    const long double tol = at_tol(d);
#define AT_CMP(what, got, want)                                                                                  \
    do {                                                                                                         \
        long double g_ = (got), w_ = (want);                                                                     \
        if (!(fabsl(g_ - w_) <= tol * (1 + fabsl(w_))) && bad++ < 5)                                             \
            fprintf(stderr, "%s %s b=%lld h=%lld i=%lld c=%lld: got %Lg want %Lg\n", axon_dtype_name(d), what,   \
                    (long long)b, (long long)h, (long long)i, (long long)c, g_, w_);                             \
    } while (0)
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < Hq; h++) {
            const int64_t hk = h / g;
            for (int64_t i = 0; i < L; i++) {
                long double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < S; j++) {
                    long double s = 0;
                    for (int64_t e = 0; e < E; e++)
                        s += tb_get(&q, pix(pr, b, h, i, e, Hq, L, E)) * tb_get(&kk, pix(pr, b, hk, j, e, Hkv, S, E));
                    s = s * (long double)p.scale + ref_mask(pr, &m, b, i, j);
                    if (pr->causal && j > i) s = -INFINITY;
                    P[j] = s;
                    if (s > mx) mx = s;
                }
                for (int64_t j = 0; j < S; j++) sum += P[j] = mx == -INFINITY ? 0 : expl(P[j] - mx);
                for (int64_t j = 0; j < S; j++) {
                    P[j] = sum > 0 ? P[j] / sum : 0;
                    Z[j] = pr->p > 0 ? (ref_keep(pr, p.seed, p.offset, ix4(b, h, i, j, Hq, L, S)) ? 1 / (1 - pr->p) : 0)
                                     : 1;
                }
                long double di = 0;
                int64_t c = -1;
                AT_CMP("lse", sum > 0 ? tb_get(&lse, (b * Hq + h) * L + i) : 0, sum > 0 ? mx + logl(sum) : 0);
                if (sum == 0) CHECK(isinf(tb_get(&lse, (b * Hq + h) * L + i)));
                for (c = 0; c < Ev; c++) {
                    long double o = 0;
                    for (int64_t j = 0; j < S; j++) o += P[j] * Z[j] * tb_get(&v, pix(pr, b, hk, j, c, Hkv, S, Ev));
                    AT_CMP("out", tb_get(&out, pix(pr, b, h, i, c, Hq, L, Ev)), o);
                    di += tb_get(&dout, pix(pr, b, h, i, c, Hq, L, Ev)) * o;
                }
                for (int64_t j = 0; j < S; j++) {
                    long double t = 0;
                    for (int64_t e = 0; e < Ev; e++)
                        t += tb_get(&dout, pix(pr, b, h, i, e, Hq, L, Ev)) *
                             tb_get(&v, pix(pr, b, hk, j, e, Hkv, S, Ev));
                    dP[j] = P[j] * (t * Z[j] - di); /* dS */
                    for (int64_t e = 0; e < Ev; e++)
                        rdv[ix4(b, hk, j, e, Hkv, S, Ev)] +=
                            P[j] * Z[j] * tb_get(&dout, pix(pr, b, h, i, e, Hq, L, Ev));
                    for (int64_t e = 0; e < E; e++)
                        rdk[ix4(b, hk, j, e, Hkv, S, E)] += p.scale * dP[j] * tb_get(&q, pix(pr, b, h, i, e, Hq, L, E));
                }
                for (c = 0; c < E; c++) {
                    long double t = 0;
                    for (int64_t j = 0; j < S; j++) t += p.scale * dP[j] * tb_get(&kk, pix(pr, b, hk, j, c, Hkv, S, E));
                    AT_CMP("dq", tb_get(&dq, pix(pr, b, h, i, c, Hq, L, E)), t);
                }
            }
        }
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hkv; h++)
            for (int64_t i = 0; i < S; i++) {
                for (int64_t c = 0; c < E; c++)
                    AT_CMP("dk", tb_get(&dk, pix(pr, b, h, i, c, Hkv, S, E)), rdk[ix4(b, h, i, c, Hkv, S, E)]);
                for (int64_t c = 0; c < Ev; c++)
                    AT_CMP("dv", tb_get(&dv, pix(pr, b, h, i, c, Hkv, S, Ev)), rdv[ix4(b, h, i, c, Hkv, S, Ev)]);
            }
#undef AT_CMP
    free(P), free(Z), free(dP), free(rdk), free(rdv);
done:
    tb_free(k, &q), tb_free(k, &kk), tb_free(k, &v), tb_free(k, &dout), tb_free(k, &out), tb_free(k, &lse);
    tb_free(k, &dq), tb_free(k, &dk), tb_free(k, &dv);
    if (m.h) tb_free(k, &m);
    return bad;
}

/* Every dtype, with 1 worker (the one-pass backward whenever B * Hkv >= 2) and 3 (the two-pass one unless
 * B * Hkv >= 6). */
static void run_all_dtypes(prob_t pr) {
    for (int threads = 1; threads <= 3; threads += 2) {
        kc_dev_t k = kc_open(threads);
        REQUIRE(k.rt);
        for (size_t i = 0; i < sizeof at_dtypes / sizeof at_dtypes[0]; i++) {
            pr.d = at_dtypes[i];
            CHECK(check_problem(&k, &pr) == 0);
        }
        axon_runtime_destroy(k.rt);
    }
}

static void test_attention_matches_reference_across_tiles(void) {
    run_all_dtypes((prob_t){0, 2, 3, 3, 70, 130, 16, 24, 0, 0, 0, 0});
    run_all_dtypes((prob_t){0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0});
}

static void test_causal_attention_is_top_left_aligned_for_short_and_long_queries(void) {
    run_all_dtypes((prob_t){0, 1, 2, 2, 100, 70, 8, 8, 1, 0, 0, 0});
    run_all_dtypes((prob_t){0, 1, 2, 2, 50, 150, 8, 8, 1, 0, 0, 0});
}

static void test_float_and_bool_masks_broadcast_and_fully_masked_rows_give_zero(void) {
    run_all_dtypes((prob_t){0, 2, 2, 2, 67, 66, 8, 8, 0, 1, 0, 0});
    run_all_dtypes((prob_t){0, 2, 2, 2, 9, 70, 8, 8, 0, 2, 0, 0});
}

static void test_hf_layouts_transposed_heads_and_an_expanded_float_mask(void) {
    /* tiles of 64 and 16 rows (transposed for the GEMMs), E not a multiple of 16, a tail tile of 6 rows */
    run_all_dtypes((prob_t){0, 2, 3, 3, 70, 67, 24, 24, 0, 3, 0, 1});
    run_all_dtypes((prob_t){0, 1, 2, 2, 80, 80, 32, 32, 1, 0, 0, 1});
    /* decoding: one and two query rows (the few-row products), GQA, the expanded mask */
    run_all_dtypes((prob_t){0, 2, 4, 2, 1, 70, 32, 32, 0, 3, 0, 1});
    run_all_dtypes((prob_t){0, 2, 4, 2, 2, 130, 16, 16, 0, 3, 0, 0});
    /* one row of 3 grouped heads (taken as one block of 3 rows), with dropout and the bool mask */
    run_all_dtypes((prob_t){0, 2, 6, 2, 1, 70, 16, 8, 0, 2, 0.3, 1});
}

static void test_grouped_query_heads_share_key_value_heads(void) {
    run_all_dtypes((prob_t){0, 1, 6, 2, 20, 33, 8, 8, 0, 0, 0, 0});
    run_all_dtypes((prob_t){0, 2, 4, 1, 70, 20, 8, 4, 1, 0, 0, 0});
}

static void test_dropout_follows_the_documented_philox_decisions(void) {
    run_all_dtypes((prob_t){0, 2, 2, 1, 70, 67, 8, 8, 0, 0, 0.3, 0});
    run_all_dtypes((prob_t){0, 1, 2, 2, 30, 30, 8, 8, 1, 1, 0.5, 0});
}

/* Head dims that are multiples of 32 and 16 or more query rows: the bfloat16 forward runs on AMX tiles where the CPU
 * has them (attention_amx.c). Blocks of 32 query rows with a tail, key blocks of 256 with a tail padded to 32 keys,
 * Ev padded to 32, causal (tiles past the limit skipped), a float mask (added to scaled scores) with a fully masked
 * row, a bool one, GQA, dropout, HF's layouts; the backward (attention_amx_bwd.c) where there is no mask or dropout. */
static void test_head_dims_of_32_and_64_cross_the_amx_tiles(void) {
    run_all_dtypes((prob_t){0, 1, 2, 2, 70, 300, 64, 48, 0, 1, 0, 0});
    run_all_dtypes((prob_t){0, 1, 4, 2, 130, 130, 32, 32, 1, 2, 0, 0});
    run_all_dtypes((prob_t){0, 2, 2, 1, 40, 270, 64, 64, 0, 3, 0.3, 1});
    run_all_dtypes((prob_t){0, 1, 2, 2, 100, 260, 32, 48, 1, 0, 0, 0});
    run_all_dtypes((prob_t){0, 1, 2, 2, 16, 33, 32, 32, 0, 0, 0, 0});
    /* without a mask or dropout the backward runs on tiles too: GQA with 64-row and 64-key tails, causal with a last query block of 16 rows */
    run_all_dtypes((prob_t){0, 2, 4, 2, 70, 130, 64, 48, 0, 0, 0, 0});
    run_all_dtypes((prob_t){0, 1, 2, 1, 80, 200, 64, 32, 1, 0, 0, 1});
}

/* float32 with 16 or more query rows and head dims up to 128, without dropout: the forward on AVX-512 register tiles
 * where the CPU has them (attention_f32_avx512.c). Query rows by 4 with a tail, key blocks of 128 with tails (more
 * than one: the online softmax rescales what earlier blocks summed), head dims of 1, 17 and 128 with value dims that
 * differ and are not multiples of 16, float and bool masks (a fully masked row), causal, GQA, HF's layouts; a head
 * dim of 129 stays on the tile code. */
static void test_float32_forward_on_register_tiles(void) {
    run_all_dtypes((prob_t){0, 1, 2, 2, 19, 257, 17, 40, 0, 1, 0, 0});
    run_all_dtypes((prob_t){0, 2, 4, 2, 16, 129, 128, 128, 1, 0, 0, 0});
    run_all_dtypes((prob_t){0, 1, 2, 1, 66, 130, 1, 3, 0, 2, 0, 1});
    run_all_dtypes((prob_t){0, 1, 1, 1, 20, 20, 129, 129, 0, 3, 0, 0});
}

/* A few query rows with head dims multiples of 32: the bfloat16 forward on AVX512-BF16 dot products where the CPU
 * has them (attention_bf16_few.c). Decoding steps with grouped heads folded into rows (1, 2 and 3 of them), key
 * blocks of 256 with a tail that is not a multiple of 16, an expanded float mask, a bool mask, causal, 15 rows with
 * a float mask that masks a whole row, HF's layouts; dropout stays on the float32 path. */
static void test_a_few_query_rows_take_bf16_dot_products(void) {
    run_all_dtypes((prob_t){0, 2, 4, 2, 1, 300, 64, 32, 0, 3, 0, 1});
    run_all_dtypes((prob_t){0, 1, 6, 2, 1, 40, 32, 32, 0, 2, 0, 0});
    run_all_dtypes((prob_t){0, 1, 2, 2, 5, 77, 32, 64, 1, 0, 0, 0});
    run_all_dtypes((prob_t){0, 1, 2, 2, 15, 270, 64, 64, 0, 1, 0, 0});
    run_all_dtypes((prob_t){0, 1, 4, 2, 1, 50, 32, 32, 0, 0, 0.3, 0});
}

/* Forward and backward outputs of a dropout problem, as bytes. With philox_at_run the backward reads its seed and
 * offset from device scalars (seed_at, offset_at) that hold 0 when it is launched and are written, while a gate still
 * holds the stream, before it runs. */
static void *run_for_bytes(int threads, uint64_t seed, size_t *nbytes, int philox_at_run) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return NULL;
    rr_state = 99;
    const int64_t B = 2, H = 2, L = 130, S = 90, E = 16, n = B * H * L * E, nk = B * H * S * E;
    const int64_t sq[4] = {B, H, L, E}, sk[4] = {B, H, S, E};
    tb_t q = tb_make(&k, AXON_FLOAT32, n, 1), kk = tb_make(&k, AXON_FLOAT32, nk, 1),
         v = tb_make(&k, AXON_FLOAT32, nk, 1), g = tb_make(&k, AXON_FLOAT32, n, 1), o = tb_make(&k, AXON_FLOAT32, n, 0),
         l = tb_make(&k, AXON_FLOAT32, B * H * L, 0), dq = tb_make(&k, AXON_FLOAT32, n, 0),
         dk = tb_make(&k, AXON_FLOAT32, nk, 0), dv = tb_make(&k, AXON_FLOAT32, nk, 0);
    axon_tensor_t tq = kc_tensor(q.dev, AXON_FLOAT32, 4, sq, NULL), tk = kc_tensor(kk.dev, AXON_FLOAT32, 4, sk, NULL),
                  tv = kc_tensor(v.dev, AXON_FLOAT32, 4, sk, NULL), tg = kc_tensor(g.dev, AXON_FLOAT32, 4, sq, NULL),
                  to = kc_tensor(o.dev, AXON_FLOAT32, 4, sq, NULL), tl = kc_tensor(l.dev, AXON_FLOAT32, 3, sq, NULL),
                  tdq = kc_tensor(dq.dev, AXON_FLOAT32, 4, sq, NULL), tdk = kc_tensor(dk.dev, AXON_FLOAT32, 4, sk, NULL),
                  tdv = kc_tensor(dv.dev, AXON_FLOAT32, 4, sk, NULL);
    axon_attention_params_t p = {0.25, 1, 0.2, seed, 5, NULL, NULL}, pb = p;
    const int64_t wrong[2] = {0, 0};
    int64_t *state = philox_at_run ? kc_upload(&k, wrong, sizeof wrong) : NULL;
    atomic_int gate = 0;
    if (state) pb.seed = pb.offset = 0, pb.seed_at = &state[0], pb.offset_at = &state[1];
    size_t total = (size_t)(2 * n + 2 * nk) * 4;
    char *out = malloc(total);
    int ok = (!philox_at_run || state) && axon_kernel_attention(k.s, &to, &tl, &tq, &tk, &tv, NULL, &p) == AXON_OK &&
             check_hold_stream(k.s, &gate) == AXON_OK &&
             axon_kernel_attention_backward(k.s, &tdq, &tdk, &tdv, &tg, &tq, &tk, &tv, NULL, &to, &tl, &pb) == AXON_OK;
    if (state) state[0] = (int64_t)seed, state[1] = 5;   /* the host device's memory is host memory */
    atomic_store(&gate, 1);
    ok = ok && tb_pull(&k, &o) && tb_pull(&k, &dq) && tb_pull(&k, &dk) && tb_pull(&k, &dv);
    if (ok) {
        memcpy(out, o.h, (size_t)n * 4);
        memcpy(out + n * 4, dq.h, (size_t)n * 4);
        memcpy(out + 2 * n * 4, dk.h, (size_t)nk * 4);
        memcpy(out + 2 * n * 4 + nk * 4, dv.h, (size_t)nk * 4);
    }
    tb_free(&k, &q), tb_free(&k, &kk), tb_free(&k, &v), tb_free(&k, &g), tb_free(&k, &o), tb_free(&k, &l);
    tb_free(&k, &dq), tb_free(&k, &dk), tb_free(&k, &dv);
    if (state) axon_mem_free(k.dev, state);
    axon_runtime_destroy(k.rt);
    if (!ok) {
        free(out);
        return NULL;
    }
    *nbytes = total;
    return out;
}

static void test_dropout_is_deterministic_for_a_seed_and_any_thread_count(void) {
    size_t n1 = 0, n3 = 0, n3b = 0, n4 = 0;
    void *a = run_for_bytes(1, 42, &n1, 0), *b = run_for_bytes(3, 42, &n3, 0), *c = run_for_bytes(3, 42, &n3b, 0),
         *e = run_for_bytes(3, 43, &n4, 0);
    CHECK(a && b && c && e && n1 == n3 && n3 == n3b && n3 == n4);
    if (a && b && c && e) {
        CHECK_EQ_I64(kc_first_diff(a, b, n1), -1);
        CHECK_EQ_I64(kc_first_diff(b, c, n1), -1);
        CHECK(kc_first_diff(b, e, n1) != -1); /* another seed, other decisions */
    }
    free(a), free(b), free(c), free(e);
}

/* A compiled backward gets the forward's seed and offset as tensors: read when the command runs, they give the same
 * decisions (the same bytes) as the values given at launch. */
static void test_backward_reads_seed_and_offset_when_it_runs(void) {
    size_t n1 = 0, n2 = 0;
    void *a = run_for_bytes(2, 0x123456789abcdefULL, &n1, 0), *b = run_for_bytes(2, 0x123456789abcdefULL, &n2, 1);
    CHECK(a && b && n1 == n2);
    if (a && b) CHECK_EQ_I64(kc_first_diff(a, b, n1), -1);
    free(a), free(b);
}

static void test_strided_query_gives_the_contiguous_result(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t B = 2, H = 3, L = 40, E = 8;
    const int64_t s4[4] = {B, H, L, E}, tr[4] = {L * H * E, E, H * E, 1}; /* [B, L, H, E] memory seen as [B, H, L, E] */
    tb_t q = tb_make(&k, AXON_FLOAT32, B * H * L * E, 1), kv = tb_make(&k, AXON_FLOAT32, B * H * L * E, 1);
    tb_t o1 = tb_make(&k, AXON_FLOAT32, q.n, 0), o2 = tb_make(&k, AXON_FLOAT32, q.n, 0),
         l = tb_make(&k, AXON_FLOAT32, B * H * L, 0), qc = tb_make(&k, AXON_FLOAT32, q.n, 0);
    axon_tensor_t ts = kc_tensor(q.dev, AXON_FLOAT32, 4, s4, tr), tc = kc_tensor(qc.dev, AXON_FLOAT32, 4, s4, NULL);
    axon_tensor_t tk = kc_tensor(kv.dev, AXON_FLOAT32, 4, s4, NULL), ta = kc_tensor(o1.dev, AXON_FLOAT32, 4, s4, NULL),
                  tb = kc_tensor(o2.dev, AXON_FLOAT32, 4, s4, NULL), tl = kc_tensor(l.dev, AXON_FLOAT32, 3, s4, NULL);
    axon_attention_params_t p = {0.3, 0, 0, 0, 0, NULL, NULL};
    CHECK_OK(axon_kernel_copy(k.s, &tc, &ts));
    CHECK_OK(axon_kernel_attention(k.s, &ta, &tl, &ts, &tk, &tk, NULL, &p));
    CHECK_OK(axon_kernel_attention(k.s, &tb, &tl, &tc, &tk, &tk, NULL, &p));
    CHECK(tb_pull(&k, &o1) && tb_pull(&k, &o2));
    CHECK_EQ_I64(kc_first_diff(o1.h, o2.h, (size_t)q.n * 4), -1);
    tb_free(&k, &q), tb_free(&k, &kv), tb_free(&k, &o1), tb_free(&k, &o2), tb_free(&k, &l), tb_free(&k, &qc);
    axon_runtime_destroy(k.rt);
}

static void test_attention_refuses_bad_input_with_messages(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    tb_t x = tb_make(&k, AXON_FLOAT32, 4096, 1), y = tb_make(&k, AXON_FLOAT32, 4096, 0);
    tb_t xi = tb_make(&k, AXON_INT32, 4096, 0), xd = tb_make(&k, AXON_FLOAT64, 4096, 0);
    const int64_t sq[4] = {2, 6, 8, 4}, sk[4] = {2, 4, 8, 4}, s3[3] = {2, 6, 8}, sbad[4] = {2, 6, 8, 5},
                  sm[2] = {3, 8}, s5[5] = {1, 2, 6, 8, 4};
    axon_tensor_t q = kc_tensor(x.dev, AXON_FLOAT32, 4, sq, NULL), k4 = kc_tensor(x.dev, AXON_FLOAT32, 4, sk, NULL),
                  k2 = kc_tensor(x.dev, AXON_FLOAT32, 4, (const int64_t[]){2, 2, 8, 4}, NULL),
                  o = kc_tensor(y.dev, AXON_FLOAT32, 4, sq, NULL), l = kc_tensor((char *)y.dev + 2048, AXON_FLOAT32, 3, s3, NULL),
                  obad = kc_tensor(y.dev, AXON_FLOAT32, 4, sbad, NULL), qi = kc_tensor(xi.dev, AXON_INT32, 4, sq, NULL),
                  qd = kc_tensor(xd.dev, AXON_FLOAT64, 4, sq, NULL), m = kc_tensor(x.dev, AXON_FLOAT32, 2, sm, NULL),
                  q5 = kc_tensor(x.dev, AXON_FLOAT32, 5, s5, NULL), ki = kc_tensor(x.dev, AXON_FLOAT32, 4, (const int64_t[]){2, 6, 8, 3}, NULL);
    axon_attention_params_t p = {1, 0, 0, 0, 0, NULL, NULL}, pd = {1, 0, 1.5, 0, 0, NULL, NULL};
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &l, &q, &k4, &k4, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not a multiple");
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &l, &q, &ki, &q, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("shapes do not fit");
    CHECK_STATUS(axon_kernel_attention(k.s, &obad, &l, &q, &k2, &k2, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out has shape [2, 6, 8, 5], expected [2, 6, 8, 4]");
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &l, &qi, &k2, &k2, NULL, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("int32");
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &l, &qd, &k2, &k2, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dtypes differ");
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &l, &q, &k2, &k2, &m, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("does not broadcast");
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &l, &q5, &k2, &k2, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("4-d");
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &l, &q, &k2, &k2, NULL, &pd), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dropout_p");
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &l, &q, &k2, &k2, NULL, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_attention(k.s, &o, &o, &q, &k2, &k2, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("lse");
    CHECK_STATUS(axon_kernel_attention_backward(k.s, &o, &k2, NULL, &o, &q, &k2, &k2, NULL, &o, &l, &p),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("together");
    CHECK_EQ_I64(axon_attention_philox_blocks(2, 3, 5, 7), (2 * 3 * 5 * 7 + 3) / 4);
    CHECK_EQ_I64(axon_attention_philox_blocks(2, 3, 0, 7), 0);
    CHECK_OK(axon_stream_sync(k.s));
    tb_free(&k, &x), tb_free(&k, &y), tb_free(&k, &xi), tb_free(&k, &xd);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_attention_matches_reference_across_tiles);
    RUN(test_causal_attention_is_top_left_aligned_for_short_and_long_queries);
    RUN(test_float_and_bool_masks_broadcast_and_fully_masked_rows_give_zero);
    RUN(test_grouped_query_heads_share_key_value_heads);
    RUN(test_dropout_follows_the_documented_philox_decisions);
    RUN(test_head_dims_of_32_and_64_cross_the_amx_tiles);
    RUN(test_float32_forward_on_register_tiles);
    RUN(test_a_few_query_rows_take_bf16_dot_products);
    RUN(test_dropout_is_deterministic_for_a_seed_and_any_thread_count);
    RUN(test_backward_reads_seed_and_offset_when_it_runs);
    RUN(test_strided_query_gives_the_contiguous_result);
    RUN(test_hf_layouts_transposed_heads_and_an_expanded_float_mask);
    RUN(test_attention_refuses_bad_input_with_messages);
    return check_report();
}
