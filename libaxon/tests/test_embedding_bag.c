/* axon/embedding_bag.h against a direct long double reference: sum (with and without per-sample weights), mean and
 * max, padding_idx, include_last_offset, empty bags, int32 and int64 indices, in float32, float64 and bfloat16;
 * the weight's gradient (with scale_grad_by_freq's counts) and the per-sample weights' gradient; the same bits for
 * 1 and 4 threads; bad indices and offsets found when the command runs, before anything is written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/embedding_bag.h"
#include "kernels_check.h"
#include "reduce_ref.h"

typedef long double ld;

#define EB_V 11
#define EB_D 5
#define EB_N 13

/* Bags: [0, 4), [4, 4) empty, [4, 9), [9, 13); index 3 appears four times, 7 (a padding row) three times. */
static const int64_t eb_idx[EB_N] = {3, 1, 7, 3, 10, 7, 3, 0, 2, 7, 3, 5, 9};
static const int64_t eb_off[4] = {0, 4, 4, 9};

static int eb_bag_of(int64_t i) {
    int b = 0;
    for (int k = 0; k < 4; k++)
        if (eb_off[k] <= i) b = k;
    return b;
}

static void *eb_up_index(const kc_dev_t *k, const int64_t *v, int64_t n, axon_dtype_t d) {
    int32_t v32[64];
    for (int64_t i = 0; i < n; i++) v32[i] = (int32_t)v[i];
    return kc_upload(k, d == AXON_INT64 ? (const void *)v : (const void *)v32, (size_t)n * axon_dtype_size(d));
}

static void *eb_up_float(const kc_dev_t *k, axon_dtype_t d, ld *v, int64_t n) {
    void *h = calloc((size_t)n, axon_dtype_size(d));
    for (int64_t i = 0; i < n; i++) {
        v[i] = (ld)((int)(rr_rand() % 129) - 64) / 32;
        rr_set(d, h, i, v[i]);
    }
    void *dev = rr_upload(k, d, h, n);
    free(h);
    return dev;
}

static int eb_compare(const kc_dev_t *k, axon_dtype_t d, const void *dev, const ld *want, int64_t n, const char *what,
                      int mode) {
    void *h = calloc((size_t)n, axon_dtype_size(d));
    int ok = kc_download(k, h, dev, (size_t)n * axon_dtype_size(d));
    const ld tol = d == AXON_FLOAT64 ? 1e-13L : d == AXON_FLOAT32 ? 1e-6L : 1e-2L;
    for (int64_t i = 0; ok && i < n; i++) {
        const ld got = rr_get(d, h, i);
        if (!(fabsl(got - want[i]) <= tol * (fabsl(want[i]) + 1))) {
            fprintf(stderr, "%s mode %d (%s): element %lld is %Lg, expected %Lg\n", what, mode, axon_dtype_name(d),
                    (long long)i, got, want[i]);
            ok = 0;
        }
    }
    free(h);
    return ok;
}

static void eb_run(const kc_dev_t *k, int mode, int psw_on, int pad, int ilo, axon_dtype_t d, axon_dtype_t it) {
    const int B = 4, noff = ilo ? 5 : 4;
    /* include_last_offset's extra offset is not read: the last bag runs to n, as on PyTorch CPU */
    int64_t off[5] = {eb_off[0], eb_off[1], eb_off[2], eb_off[3], EB_N - 2};
    ld w[EB_V * EB_D], psw[EB_N], g[4 * EB_D], out[4 * EB_D] = {0}, gw[EB_V * EB_D] = {0}, gpsw[EB_N] = {0};
    int64_t mi[4 * EB_D], size[4] = {0}, counts[EB_V] = {0};
    const int64_t padding = pad ? 7 : -1;
    void *dw = eb_up_float(k, d, w, EB_V * EB_D), *dpsw = eb_up_float(k, d, psw, EB_N);
    void *dg = eb_up_float(k, d, g, 4 * EB_D);
    for (int i = 0; i < EB_N; i++) counts[eb_idx[i]]++;
    for (int b = 0; b < B; b++) {
        const int64_t start = eb_off[b], end = b + 1 < B ? eb_off[b + 1] : EB_N;
        for (int j = 0; j < EB_D; j++) {
            int first = 1;
            mi[b * EB_D + j] = -1;
            for (int64_t i = start; i < end; i++) {
                const int64_t r = eb_idx[i];
                if (r == padding) continue;
                const ld v = w[r * EB_D + j];
                if (mode == AXON_BAG_MAX) {
                    if (first || v > out[b * EB_D + j]) out[b * EB_D + j] = v, mi[b * EB_D + j] = r;
                } else {
                    out[b * EB_D + j] += v * (psw_on ? psw[i] : 1);
                }
                first = 0;
            }
        }
        for (int64_t i = start; i < end; i++) size[b] += eb_idx[i] != padding;
        if (mode == AXON_BAG_MEAN && size[b] > 0)
            for (int j = 0; j < EB_D; j++) out[b * EB_D + j] /= size[b];
    }
    for (int i = 0; i < EB_N; i++) {
        const int64_t r = eb_idx[i], b = eb_bag_of(i);
        if (r == padding) continue;
        for (int j = 0; j < EB_D; j++) {
            gpsw[i] += g[b * EB_D + j] * w[r * EB_D + j];
            if (mode == AXON_BAG_MAX) continue;
            ld scale = (psw_on ? psw[i] : 1) / counts[r];
            if (mode == AXON_BAG_MEAN) scale /= size[b];
            gw[r * EB_D + j] += g[b * EB_D + j] * scale;
        }
    }
    if (mode == AXON_BAG_MAX)
        for (int e = 0; e < 4 * EB_D; e++)
            if (mi[e] >= 0) gw[mi[e] * EB_D + e % EB_D] += g[e];
    int64_t sw[2] = {EB_V, EB_D}, so[2] = {B, EB_D}, sn[1] = {EB_N}, sb[1] = {B}, soff[1] = {noff}, sv[1] = {EB_V};
    void *didx = eb_up_index(k, eb_idx, EB_N, it), *doff = eb_up_index(k, off, noff, it);
    const axon_dtype_t acc = d == AXON_FLOAT64 ? AXON_FLOAT64 : AXON_FLOAT32;
    void *dout = kc_upload(k, NULL, 4 * EB_D * axon_dtype_size(d)), *do2b = kc_upload(k, NULL, EB_N * 8);
    void *dsize = kc_upload(k, NULL, 4 * 8), *dmi = kc_upload(k, NULL, 4 * EB_D * 8);
    void *dcnt = kc_upload(k, NULL, EB_V * 8);
    void *dgw = kc_upload(k, NULL, EB_V * EB_D * axon_dtype_size(acc)), *dgpsw = kc_upload(k, NULL, EB_N * 8);
    axon_tensor_t tw = kc_tensor(dw, d, 2, sw, NULL), tout = kc_tensor(dout, d, 2, so, NULL);
    axon_tensor_t tidx = kc_tensor(didx, it, 1, sn, NULL), toff = kc_tensor(doff, it, 1, soff, NULL);
    axon_tensor_t to2b = kc_tensor(do2b, AXON_INT64, 1, sn, NULL), tsize = kc_tensor(dsize, AXON_INT64, 1, sb, NULL);
    axon_tensor_t tmi = kc_tensor(dmi, AXON_INT64, 2, so, NULL), tpsw = kc_tensor(dpsw, d, 1, sn, NULL);
    axon_tensor_t tg = kc_tensor(dg, d, 2, so, NULL), tgw = kc_tensor(dgw, acc, 2, sw, NULL);
    axon_tensor_t tcnt = kc_tensor(dcnt, AXON_INT64, 1, sv, NULL), tgpsw = kc_tensor(dgpsw, d, 1, sn, NULL);
    axon_embedding_bag_params_t p = {(axon_bag_mode_t)mode, ilo, padding};
    CHECK_OK(axon_kernel_embedding_bag(k->s, &tout, &to2b, &tsize, mode == AXON_BAG_MAX ? &tmi : NULL, &tw, &tidx,
                                       &toff, psw_on ? &tpsw : NULL, &p));
    CHECK(eb_compare(k, d, dout, out, 4 * EB_D, "embedding_bag", mode));
    int64_t got_size[4], got_mi[4 * EB_D], got_o2b[EB_N];
    CHECK(kc_download(k, got_size, dsize, sizeof got_size) && kc_download(k, got_o2b, do2b, sizeof got_o2b));
    for (int b = 0; b < B; b++) CHECK_EQ_I64(got_size[b], size[b]);
    for (int i = 0; i < EB_N; i++) CHECK_EQ_I64(got_o2b[i], eb_bag_of(i));
    if (mode == AXON_BAG_MAX) {
        CHECK(kc_download(k, got_mi, dmi, sizeof got_mi));
        for (int e = 0; e < 4 * EB_D; e++) CHECK_EQ_I64(got_mi[e], mi[e]);
    }
    CHECK_OK(axon_kernel_embedding_bag_backward(k->s, &tgw, &tg, &tidx, &to2b, &tsize, &tmi, psw_on ? &tpsw : NULL,
                                                mode == AXON_BAG_MAX ? NULL : &tcnt, &p));
    CHECK(eb_compare(k, acc, dgw, gw, EB_V * EB_D, "embedding_bag_backward", mode));
    if (mode == AXON_BAG_SUM) {
        CHECK_OK(axon_kernel_embedding_bag_psw_backward(k->s, &tgpsw, &tg, &tw, &tidx, &to2b, &p));
        CHECK(eb_compare(k, d, dgpsw, gpsw, EB_N, "per_sample_weights_backward", mode));
    }
    CHECK_OK(axon_stream_sync(k->s));
    void *ptrs[] = {dw, dpsw, dg, didx, doff, dout, do2b, dsize, dmi, dcnt, dgw, dgpsw};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) axon_mem_free(k->dev, ptrs[i]);
}

static void test_every_mode_matches_reference(void) {
    static const axon_dtype_t dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16};
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    for (int mode = 0; mode < AXON_BAG_MODE_COUNT; mode++)
        for (int psw = 0; psw < (mode == AXON_BAG_SUM ? 2 : 1); psw++)
            for (int pad = 0; pad < 2; pad++)
                for (int ilo = 0; ilo < 2; ilo++)
                    for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
                        eb_run(&k, mode, psw, pad, ilo, dtypes[di], (pad + ilo) % 2 ? AXON_INT32 : AXON_INT64);
    axon_runtime_destroy(k.rt);
}

static void test_gradient_is_bitwise_the_same_for_any_thread_count(void) {
    enum { V = 300, D = 70, N = 2000, B = 150 };
    int64_t *idx = malloc(sizeof(int64_t) * N), off[B];
    float *g = malloc(sizeof(float) * B * D), *res[2] = {malloc(sizeof(float) * V * D), malloc(sizeof(float) * V * D)};
    for (int i = 0; i < N; i++) idx[i] = rr_rand() % 37 == 0 ? 5 : (int64_t)(rr_rand() % V);
    for (int b = 0; b < B; b++) off[b] = (int64_t)b * N / B;
    for (int i = 0; i < B * D; i++) g[i] = (float)((int)(rr_rand() % 2001) - 1000) / 7.0f;
    int64_t sw[2] = {V, D}, sg[2] = {B, D}, sn[1] = {N};
    for (int t = 0; t < 2; t++) {
        kc_dev_t k = kc_open(t ? 4 : 1);
        REQUIRE(k.s);
        int64_t o2b[N];
        for (int i = 0, b = 0; i < N; i++) {
            while (b + 1 < B && off[b + 1] <= i) b++;
            o2b[i] = b;
        }
        void *didx = kc_upload(&k, idx, sizeof(int64_t) * N), *do2b = kc_upload(&k, o2b, sizeof o2b);
        void *dg = kc_upload(&k, g, sizeof(float) * B * D), *dgw = kc_upload(&k, NULL, sizeof(float) * V * D);
        axon_tensor_t tidx = kc_tensor(didx, AXON_INT64, 1, sn, NULL), to2b = kc_tensor(do2b, AXON_INT64, 1, sn, NULL);
        axon_tensor_t tg = kc_tensor(dg, AXON_FLOAT32, 2, sg, NULL), tgw = kc_tensor(dgw, AXON_FLOAT32, 2, sw, NULL);
        axon_embedding_bag_params_t p = {AXON_BAG_SUM, 0, 5};
        CHECK_OK(axon_kernel_embedding_bag_backward(k.s, &tgw, &tg, &tidx, &to2b, NULL, NULL, NULL, NULL, &p));
        CHECK(kc_download(&k, res[t], dgw, sizeof(float) * V * D));
        axon_mem_free(k.dev, didx), axon_mem_free(k.dev, do2b), axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dgw);
        axon_runtime_destroy(k.rt);
    }
    CHECK(kc_first_diff(res[0], res[1], sizeof(float) * V * D) < 0);
    free(idx), free(g), free(res[0]), free(res[1]);
}

/* Bad indices and offsets fail the command when it runs, naming the value, and leave out as it was. */
static void test_bad_indices_and_offsets_fail_the_command(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    float w[4 * 2] = {1, 2, 3, 4, 5, 6, 7, 8}, out[2 * 2] = {-1, -1, -1, -1};
    int64_t sw[2] = {4, 2}, so[2] = {2, 2}, sn[1] = {3}, sb[1] = {2};
    static const struct { int64_t idx[3], off[2]; const char *msg; } bad[] = {
        {{0, 4, 1}, {0, 1}, "embedding_bag(): index 4 is out of bounds for dimension 0 with size 4"},
        {{0, -1, 1}, {0, 1}, "index -1 is out of bounds"},
        {{0, 1, 2}, {1, 2}, "offsets[0] has to be 0"},
        {{0, 1, 2}, {0, 4}, "offsets[-1] can not be greater than input's length 3, but got offsets[-1] of 4"},
        {{0, 1, 2}, {2, 1}, "offsets[0] has to be 0"},
    };
    void *dw = kc_upload(&k, w, sizeof w), *dout = kc_upload(&k, NULL, sizeof out), *dsize = kc_upload(&k, NULL, 16);
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        CHECK_OK(axon_memcpy(dout, out, sizeof out, AXON_COPY_HOST_TO_DEVICE, k.s));
        void *didx = kc_upload(&k, bad[c].idx, 24), *doff = kc_upload(&k, bad[c].off, 16);
        axon_tensor_t tw = kc_tensor(dw, AXON_FLOAT32, 2, sw, NULL), tout = kc_tensor(dout, AXON_FLOAT32, 2, so, NULL);
        axon_tensor_t tidx = kc_tensor(didx, AXON_INT64, 1, sn, NULL), toff = kc_tensor(doff, AXON_INT64, 1, sb, NULL);
        axon_tensor_t tsize = kc_tensor(dsize, AXON_INT64, 1, sb, NULL);
        axon_embedding_bag_params_t p = {AXON_BAG_SUM, 0, -1};
        CHECK_OK(axon_kernel_embedding_bag(k.s, &tout, NULL, &tsize, NULL, &tw, &tidx, &toff, NULL, &p));
        CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
        CHECK_MSG(bad[c].msg);
        float got[4];
        CHECK(kc_download(&k, got, dout, sizeof got));
        for (int i = 0; i < 4; i++) CHECK(got[i] == -1);
        axon_mem_free(k.dev, didx), axon_mem_free(k.dev, doff);
    }
    /* decreasing offsets after a valid first one */
    int64_t idx[3] = {0, 1, 2}, off3[3] = {0, 2, 1}, s3[1] = {3};
    void *didx = kc_upload(&k, idx, 24), *doff = kc_upload(&k, off3, 24), *dout3 = kc_upload(&k, NULL, 24);
    void *dsize3 = kc_upload(&k, NULL, 24);
    int64_t so3[2] = {3, 2};
    axon_tensor_t tw = kc_tensor(dw, AXON_FLOAT32, 2, sw, NULL), tout = kc_tensor(dout3, AXON_FLOAT32, 2, so3, NULL);
    axon_tensor_t tidx = kc_tensor(didx, AXON_INT64, 1, sn, NULL), toff = kc_tensor(doff, AXON_INT64, 1, s3, NULL);
    axon_tensor_t tsize = kc_tensor(dsize3, AXON_INT64, 1, s3, NULL);
    axon_embedding_bag_params_t p = {AXON_BAG_MEAN, 0, -1};
    CHECK_OK(axon_kernel_embedding_bag(k.s, &tout, NULL, &tsize, NULL, &tw, &tidx, &toff, NULL, &p));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("offsets must be non-decreasing, but offsets[2] = 1 is below offsets[1] = 2");
    /* launch-time errors */
    p.mode = AXON_BAG_MAX;
    CHECK_STATUS(axon_kernel_embedding_bag(k.s, &tout, NULL, &tsize, NULL, &tw, &tidx, &toff, &tw, &p),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("per_sample_weights are only supported for mode='sum'");
    p.mode = (axon_bag_mode_t)7;
    CHECK_STATUS(axon_kernel_embedding_bag(k.s, &tout, NULL, &tsize, NULL, &tw, &tidx, &toff, NULL, &p),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("mode 7 is not an axon_bag_mode_t");
    p.mode = AXON_BAG_SUM;
    axon_tensor_t tidx_f = kc_tensor(dw, AXON_FLOAT32, 1, sn, NULL);
    CHECK_STATUS(axon_kernel_embedding_bag(k.s, &tout, NULL, &tsize, NULL, &tw, &tidx_f, &toff, NULL, &p),
                 AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("embedding_bag: indices dtype float32 is not int32 or int64");
    CHECK_STATUS(axon_kernel_embedding_bag(k.s, &tw, NULL, &tsize, NULL, &tw, &tidx, &toff, NULL, &p),
                 AXON_ERROR_INVALID_ARG);
    CHECK_MSG("embedding_bag: out [4, 2] must be contiguous with 2 dimension(s) fitting the other tensors");
    CHECK_OK(axon_stream_sync(k.s));
    void *ptrs[] = {dw, dout, dsize, didx, doff, dout3, dsize3};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) axon_mem_free(k.dev, ptrs[i]);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_mode_matches_reference);
    RUN(test_gradient_is_bitwise_the_same_for_any_thread_count);
    RUN(test_bad_indices_and_offsets_fail_the_command);
    return check_report();
}
