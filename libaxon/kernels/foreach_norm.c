/* Per-tensor norms of a list (axon/foreach.h's axon_foreach_norm), as clip_grad_norm_ asks for them.
 *
 * One piece is one whole tensor, summed in double by one thread in element order: the result does not depend on
 * the thread count, and double accumulation keeps a float32 sum of millions of squares accurate (PyTorch's CPU
 * norm reaches a similar accuracy with cascaded float sums). Tensors run in parallel. */
#include <math.h>
#include <string.h>

#include "foreach_impl.h"
#include "internal.h"

enum { FN_OUT, FN_IN, FN_LISTS };

static void fe_norm_piece(const fe_job_t *j, int64_t i, int64_t lo, int64_t hi) {
    const fe_cmd_t *c = j->c;
    const double ord = c->p.ord;
    const size_t es = axon_dtype_size(c->dtype[FN_IN]);
    const axon_convert_fn ld = axon_convert_get(c->dtype[FN_IN], AXON_FLOAT64);
    const char *p = fe_ptr(c, FN_IN, i);
    _Alignas(16) double x[FE_BLOCK];
    double acc = 0.0;
    int nan = 0;
    for (int64_t off = lo; off < hi; off += FE_BLOCK) {
        const int64_t m = hi - off < FE_BLOCK ? hi - off : FE_BLOCK;
        ld((char *)x, 1, p + off * (int64_t)es, 1, m);
        if (ord == 2.0) {
            for (int64_t k = 0; k < m; k++) acc += x[k] * x[k];
        } else if (ord == 1.0) {
            for (int64_t k = 0; k < m; k++) acc += fabs(x[k]);
        } else {
            for (int64_t k = 0; k < m; k++) {
                double v = fabs(x[k]);
                nan |= v != v;
                acc = v > acc ? v : acc;
            }
        }
    }
    double r = ord == 2.0 ? sqrt(acc) : acc;
    if (nan) r = NAN;
    axon_convert_get(AXON_FLOAT64, c->dtype[FN_OUT])(fe_ptr(c, FN_OUT, i), 1, (const char *)&r, 1, 1);
}

axon_status_t axon_foreach_norm(axon_stream_t s, int64_t n, const axon_tensor_t *out, const axon_tensor_t *a,
                                double ord) {
    const char *name = "foreach_norm";
    if (n < 0) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: list length %lld is negative", name, (long long)n);
    if (!(ord == 1.0 || ord == 2.0 || ord == INFINITY))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: ord %g is not 1, 2 or inf", name, ord);
    if (n == 0) return AXON_OK;
    axon_status_t st = axon_fe_check_list(name, "self", n, a, NULL, NULL, 0);
    if (st == AXON_OK) st = axon_fe_check_list(name, "out", n, out, NULL, NULL, 1);
    if (st != AXON_OK) return st;
    for (int64_t i = 0; i < n; i++)
        if (axon_tensor_numel(&out[i]) != 1)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out[%lld] must hold one element, it has %lld", name,
                             (long long)i, (long long)axon_tensor_numel(&out[i]));
    fe_launch_t l;
    memset(&l, 0, sizeof l);
    l.name = name;
    l.n = n;
    l.cmd.piece = fe_norm_piece;
    l.cmd.per_tensor = 1;
    l.cmd.nlists = FN_LISTS;
    l.cmd.skip_num = -1;
    l.cmd.p.ord = ord;
    l.lists[FN_OUT] = out;
    l.lists[FN_IN] = a;
    l.shape_list = FN_IN;
    l.compute_list = FN_IN;
    return axon_fe_submit(s, &l);
}
