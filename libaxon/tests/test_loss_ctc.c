/* axon_kernel_ctc_loss and its backward against a brute-force reference: the likelihood of a target is the sum, over
 * every path of C^T labels that collapses to it (repeats merged, then blanks dropped), of the path's probability.
 * The backward is checked against central differences of that reference through a log_softmax (the gradient PyTorch
 * defines is the one with respect to the logits). Also: concatenated and int32 targets, input length 0, impossible
 * alignments (inf, and zero_infinity), and bad labels and arguments refused with a message.
 * Tolerances: 1e-12 relative for float64 losses, 2e-6 for float32; 1e-6 absolute for the float64 gradient. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/loss.h"
#include "kernels_check.h"

enum { T = 5, N = 4, C = 3, S = 3, L = 2 * S + 1 };

static const int64_t targets2d[N][S] = {{1, 2, 2}, {1, 1, 0}, {2, 0, 0}, {1, 2, 0}};
static const int64_t input_lengths[N] = {5, 4, 0, 1};   /* element 3: two labels in one frame, impossible */
static const int64_t target_lengths[N] = {3, 2, 0, 2};

/* -log of the sum over every path of il frames that collapses to the target (inf when none does). */
static double ref_nll(const double *lp, int64_t b, int64_t il, const int64_t *tg, int64_t tl) {
    double total = 0;
    int64_t paths = 1;
    for (int64_t t = 0; t < il; t++) paths *= C;
    for (int64_t code = 0; code < paths; code++) {
        int64_t path[T], out[T], n = 0, x = code;
        for (int64_t t = 0; t < il; t++) path[t] = x % C, x /= C;
        for (int64_t t = 0; t < il; t++)
            if (path[t] != 0 && (t == 0 || path[t] != path[t - 1])) out[n++] = path[t];
        if (n != tl || (n > 0 && memcmp(out, tg, sizeof(int64_t) * (size_t)n) != 0)) continue;
        double lsum = 0;
        for (int64_t t = 0; t < il; t++) lsum += lp[(t * N + b) * C + path[t]];
        total += exp(lsum);
    }
    return -log(total);
}

static void log_softmax_rows(const double *z, double *lp) {
    for (int64_t r = 0; r < T * N; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < C; c++) m = fmax(m, z[r * C + c]);
        for (int c = 0; c < C; c++) s += exp(z[r * C + c] - m);
        for (int c = 0; c < C; c++) lp[r * C + c] = z[r * C + c] - m - log(s);
    }
}

typedef struct ctc_dev {
    void *lp, *tg, *il, *tl, *nll, *alpha, *beta, *grad, *gout;
} ctc_dev_t;

/* Forward (and backward with grad_out 1 when grad != NULL) of host log_probs lp in dtype d on the device. */
static void run_ctc(const kc_dev_t *k, axon_dtype_t d, const double *lp, int flat, int tg32, int zero_infinity,
                    double *nll, double *grad) {
    const size_t es = axon_dtype_size(d);
    char hlp[T * N * C * 8], hones[N * 8];
    for (int i = 0; i < T * N * C; i++) {
        if (d == AXON_FLOAT64) ((double *)hlp)[i] = lp[i];
        else ((float *)hlp)[i] = (float)lp[i];
    }
    for (int i = 0; i < N; i++) {
        if (d == AXON_FLOAT64) ((double *)hones)[i] = 1.0;
        else ((float *)hones)[i] = 1.0f;
    }
    int64_t flat64[N * S], nflat = 0;
    int32_t t32[N * S];
    for (int b = 0; b < N; b++)
        for (int i = 0; i < (flat ? target_lengths[b] : S); i++) flat64[nflat++] = targets2d[b][i];
    for (int i = 0; i < nflat; i++) t32[i] = (int32_t)flat64[i];
    ctc_dev_t v;
    v.lp = kc_upload(k, hlp, T * N * C * es);
    v.tg = tg32 ? kc_upload(k, t32, sizeof(int32_t) * (size_t)nflat)
                : kc_upload(k, flat64, sizeof(int64_t) * (size_t)nflat);
    v.il = kc_upload(k, input_lengths, sizeof input_lengths);
    v.tl = kc_upload(k, target_lengths, sizeof target_lengths);
    v.nll = kc_upload(k, NULL, N * es), v.alpha = kc_upload(k, NULL, N * T * L * es);
    v.beta = kc_upload(k, NULL, N * T * L * es), v.grad = kc_upload(k, NULL, T * N * C * es);
    v.gout = kc_upload(k, hones, N * es);
    const int64_t lps[3] = {T, N, C}, n1[1] = {N}, als[3] = {N, T, L}, tg2[2] = {N, S}, tg1[1] = {nflat};
    axon_tensor_t tlp = kc_tensor(v.lp, d, 3, lps, NULL), tnll = kc_tensor(v.nll, d, 1, n1, NULL);
    axon_tensor_t ttg = kc_tensor(v.tg, tg32 ? AXON_INT32 : AXON_INT64, flat ? 1 : 2, flat ? tg1 : tg2, NULL);
    axon_tensor_t til = kc_tensor(v.il, AXON_INT64, 1, n1, NULL), ttl = kc_tensor(v.tl, AXON_INT64, 1, n1, NULL);
    axon_tensor_t tal = kc_tensor(v.alpha, d, 3, als, NULL), tbe = kc_tensor(v.beta, d, 3, als, NULL);
    axon_tensor_t tgr = kc_tensor(v.grad, d, 3, lps, NULL), tgo = kc_tensor(v.gout, d, 1, n1, NULL);
    CHECK_OK(axon_kernel_ctc_loss(k->s, &tnll, &tal, &tlp, &ttg, &til, &ttl, 0));
    if (grad) CHECK_OK(axon_kernel_ctc_loss_backward(k->s, &tgr, &tbe, &tgo, &tlp, &ttg, &til, &ttl, &tnll, &tal, 0,
                                                     zero_infinity));
    char hn[N * 8], hg[T * N * C * 8];
    CHECK(kc_download(k, hn, v.nll, N * es));
    for (int i = 0; i < N; i++) nll[i] = d == AXON_FLOAT64 ? ((double *)hn)[i] : ((float *)hn)[i];
    if (grad) {
        CHECK(kc_download(k, hg, v.grad, T * N * C * es));
        for (int i = 0; i < T * N * C; i++) grad[i] = d == AXON_FLOAT64 ? ((double *)hg)[i] : ((float *)hg)[i];
    }
    void *all[] = {v.lp, v.tg, v.il, v.tl, v.nll, v.alpha, v.beta, v.grad, v.gout};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) axon_mem_free(k->dev, all[i]);
}

static void random_logits(double *z, unsigned seed) {
    srand(seed);
    for (int i = 0; i < T * N * C; i++) z[i] = (double)rand() / RAND_MAX * 4 - 2;
}

static void test_losses_match_the_sum_over_paths(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    double z[T * N * C], lp[T * N * C], nll[N];
    random_logits(z, 7);
    log_softmax_rows(z, lp);
    for (int di = 0; di < 2; di++)
        for (int form = 0; form < 3; form++) { /* 2-D int64, concatenated int64, concatenated int32 */
            const axon_dtype_t d = di ? AXON_FLOAT32 : AXON_FLOAT64;
            run_ctc(&k, d, lp, form > 0, form == 2, 0, nll, NULL);
            for (int b = 0; b < N; b++) {
                const double want = input_lengths[b] == 0
                                        ? (target_lengths[b] == 0 ? 0.0 : INFINITY)
                                        : ref_nll(lp, b, input_lengths[b], targets2d[b], target_lengths[b]);
                const double tol = (di ? 2e-6 : 1e-12) * fabs(want);
                if (isinf(want) ? nll[b] != want : !(fabs(nll[b] - want) <= tol)) {
                    fprintf(stderr, "  %s form %d element %d: nll %.17g, want %.17g\n", axon_dtype_name(d), form, b,
                            nll[b], want);
                    check_failures_in_test++;
                }
            }
        }
    axon_runtime_destroy(k.rt);
}

static void test_gradient_is_the_derivative_through_log_softmax(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    double z[T * N * C], lp[T * N * C], nll[N], grad[T * N * C], zp[T * N * C], lpp[T * N * C];
    random_logits(z, 11);
    log_softmax_rows(z, lp);
    run_ctc(&k, AXON_FLOAT64, lp, 0, 0, 1, nll, grad);
    const double h = 1e-6;
    for (int i = 0; i < T * N * C; i++) {
        const int b = i / C % N, t = i / (N * C);
        double fd = 0;
        if (t < input_lengths[b] && !isinf(nll[b])) {
            double f[2];
            for (int side = 0; side < 2; side++) {
                memcpy(zp, z, sizeof zp);
                zp[i] += side ? h : -h;
                log_softmax_rows(zp, lpp);
                f[side] = ref_nll(lpp, b, input_lengths[b], targets2d[b], target_lengths[b]);
            }
            fd = (f[1] - f[0]) / (2 * h);
        }
        /* past the input and (zero_infinity) for the impossible element 3, the gradient is 0 */
        if (!(fabs(grad[i] - fd) <= 1e-6)) {
            fprintf(stderr, "  grad[t %d, b %d, c %d] = %.12g, finite difference %.12g\n", t, b, i % C, grad[i], fd);
            check_failures_in_test++;
        }
    }
    CHECK(isinf(nll[3]));
    /* without zero_infinity the impossible element's gradient is not zeroed (NaN or inf terms, as PyTorch's) */
    run_ctc(&k, AXON_FLOAT64, lp, 0, 0, 0, nll, grad);
    int finite = 1;
    for (int t = 0; t < input_lengths[3]; t++)
        for (int c = 0; c < C; c++) finite &= isfinite(grad[(t * N + 3) * C + c]);
    CHECK(!finite);
    axon_runtime_destroy(k.rt);
}

static void test_bad_labels_and_arguments_are_refused(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    double lp[T * N * C] = {0}, nll[N], alpha[N * T * L];
    int64_t tg[N * S] = {1, 2, 2, 1, 1, 0, 5, 0, 0, 1, 2, 0}; /* element 2's first label is 5, but its length is 0 */
    int64_t bad_tl[N] = {3, 2, 1, 2};
    const int64_t lps[3] = {T, N, C}, n1[1] = {N}, als[3] = {N, T, L}, tg2[2] = {N, S};
    axon_tensor_t tlp = kc_tensor(lp, AXON_FLOAT64, 3, lps, NULL), tnll = kc_tensor(nll, AXON_FLOAT64, 1, n1, NULL);
    axon_tensor_t ttg = kc_tensor(tg, AXON_INT64, 2, tg2, NULL), tal = kc_tensor(alpha, AXON_FLOAT64, 3, als, NULL);
    axon_tensor_t til = kc_tensor((void *)input_lengths, AXON_INT64, 1, n1, NULL);
    axon_tensor_t ttl = kc_tensor((void *)target_lengths, AXON_INT64, 1, n1, NULL);
    CHECK_OK(axon_kernel_ctc_loss(k.s, &tnll, &tal, &tlp, &ttg, &til, &ttl, 0));
    CHECK_OK(axon_stream_sync(k.s)); /* a label past the target length is never read */
    axon_tensor_t tbad = kc_tensor(bad_tl, AXON_INT64, 1, n1, NULL);
    CHECK_OK(axon_kernel_ctc_loss(k.s, &tnll, &tal, &tlp, &ttg, &til, &tbad, 0));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("ctc_loss: batch element 2");
    CHECK_STATUS(axon_kernel_ctc_loss(k.s, &tnll, &tal, &tlp, &ttg, &til, &ttl, 3), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("blank 3 is not a class of 3");
    axon_tensor_t thalf = kc_tensor(lp, AXON_FLOAT16, 3, lps, NULL);
    CHECK_STATUS(axon_kernel_ctc_loss(k.s, &tnll, &tal, &thalf, &ttg, &til, &ttl, 0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("float16");
    const int64_t short_al[3] = {N, T, L - 1};
    axon_tensor_t tshort = kc_tensor(alpha, AXON_FLOAT64, 3, short_al, NULL);
    CHECK_OK(axon_kernel_ctc_loss(k.s, &tnll, &tshort, &tlp, &ttg, &til, &ttl, 0));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG); /* element 0 needs 2 * 3 + 1 positions */
    CHECK_MSG("batch element 0");
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_losses_match_the_sum_over_paths);
    RUN(test_gradient_is_the_derivative_through_log_softmax);
    RUN(test_bad_labels_and_arguments_are_refused);
    return check_report();
}
