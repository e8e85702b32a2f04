/* The plane loops of conv_depthwise.c, for one compute type: included twice there, with DW_T float and double,
 * DW_V a 32-byte GCC vector of DW_T and DW_FN(name) naming this type's copy. The loops GCC should vectorize are
 * compiled per instruction set (AXON_CLONES).
 *
 * Planes are contiguous [d, h, w] arrays (conv_impl.h pads 1-D and 2-D convolutions in front to three dimensions).
 * The fast paths read a zero-padded copy of the plane (dw_pad_plane) in which every kernel tap of every output is in
 * bounds, split by the stride into phase planes (element (a, b, c) of the padded plane goes to phase
 * (a % s0, b % s1, c % s2), at (a / s0, b / s1, c / s2)). A tap is then one fixed offset for all outputs, and
 * consecutive outputs read consecutive elements whatever the stride. */

/* base[r * vol + k] = row[k * st + r] for the p2 elements of row: one padded row split into its st phases. */
AXON_CLONES static void DW_FN(dw_deinterleave)(const DW_T *restrict row, int64_t p2, int64_t st, int64_t vol,
                                               DW_T *restrict base) {
    if (st == 2) { /* the common case, in a form GCC vectorizes (two loads, two shuffles, two stores) */
        DW_T *restrict d0 = base, *restrict d1 = base + vol;
        const int64_t h = p2 / 2;
        for (int64_t k = 0; k < h; k++) {
            d0[k] = row[2 * k];
            d1[k] = row[2 * k + 1];
        }
        if (p2 & 1) d0[h] = row[2 * h];
        return;
    }
    for (int64_t r = 0; r < st && r < p2; r++) {
        DW_T *restrict d = base + r * vol;
        for (int64_t k = 0; k * st + r < p2; k++) d[k] = row[k * st + r];
    }
}

/* dst = src (extents s) placed at offset lead[] in a zero plane of extents p, split by strides st into phase planes
 * of extents q = ceil(p / st) each, phase after phase; `total` elements of dst are written (zeros past the phases).
 * src elements that fall past p are dropped. With a stride along w, each row is first padded in prow (p[2]
 * elements). */
static void DW_FN(dw_pad_plane)(const DW_T *src, const int64_t *s, DW_T *dst, const int64_t *p, const int64_t *lead,
                                const int64_t *st, const int64_t *q, int64_t total, DW_T *prow) {
    memset(dst, 0, (size_t)total * sizeof(DW_T));
    const int64_t n2 = s[2] < p[2] - lead[2] ? s[2] : p[2] - lead[2], vol = q[0] * q[1] * q[2];
    if (n2 <= 0) return;
    if (st[2] > 1) memset(prow, 0, (size_t)p[2] * sizeof(DW_T));
    for (int64_t a = 0; a < s[0] && a + lead[0] < p[0]; a++) {
        const int64_t A = a + lead[0];
        for (int64_t b = 0; b < s[1] && b + lead[1] < p[1]; b++) {
            const int64_t B = b + lead[1];
            const DW_T *row = src + (a * s[1] + b) * s[2];
            DW_T *base = dst + ((A % st[0]) * st[1] + B % st[1]) * st[2] * vol +
                         ((A / st[0]) * q[1] + B / st[1]) * q[2];
            if (st[2] == 1) {
                memcpy(base + lead[2], row, (size_t)n2 * sizeof(DW_T));
            } else {
                memcpy(prow + lead[2], row, (size_t)n2 * sizeof(DW_T));
                DW_FN(dw_deinterleave)(prow, p[2], st[2], vol, base);
            }
        }
    }
}

/* Q vectors of outputs from out + i: (acc ? out : bias) + sum over taps t of wt[t] * in[i + off[t] ...], in tap
 * order. Q independent chains of adds: with fewer, each add waits on the previous one's latency. */
#define DW_TAPS_BLOCK(Q)                                                                                              \
    do {                                                                                                              \
        DW_V a[Q];                                                                                                    \
        for (int q = 0; q < (Q); q++) {                                                                               \
            if (acc) memcpy(&a[q], out + i + q * L, sizeof a[q]);                                                    \
            else a[q] = (DW_V){0} + bias;                                                                             \
        }                                                                                                             \
        const DW_T *p = in + i;                                                                                       \
        for (int64_t t = 0; t < ntaps; t++) {                                                                         \
            const DW_T *pt = p + off[t];                                                                              \
            for (int q = 0; q < (Q); q++) {                                                                           \
                DW_V v;                                                                                               \
                memcpy(&v, pt + q * L, sizeof v);                                                                     \
                a[q] += wt[t] * v;                                                                                    \
            }                                                                                                         \
        }                                                                                                             \
        for (int q = 0; q < (Q); q++) memcpy(out + i + q * L, &a[q], sizeof a[q]);                                   \
    } while (0)

/* out[i] = (acc ? out[i] : bias) + sum over taps t of wt[t] * in[i + off[t]], taps in order, for i in [0, n) rounded
 * up to 4 * L (out and in must have room for that, and in for the largest offset past it): eight vectors at a time,
 * then four. */
AXON_CLONES static void DW_FN(dw_flat_taps)(const DW_T *in, int64_t n, const int64_t *off, const DW_T *wt,
                                            int64_t ntaps, int acc, DW_T bias, DW_T *out) {
    enum { L = (int)(sizeof(DW_V) / sizeof(DW_T)) };
    int64_t i = 0;
    for (; i + 8 * L <= n; i += 8 * L) DW_TAPS_BLOCK(8);
    for (; i < n; i += 4 * L) DW_TAPS_BLOCK(4);
}
#undef DW_TAPS_BLOCK

/* sum of a[i] * b[i] for i in [0, n): DW_V lanes of partial sums, then a scalar tail. */
static inline __attribute__((always_inline)) DW_T DW_FN(dw_dot)(const DW_T *a, const DW_T *b, int64_t n) {
    enum { L = (int)(sizeof(DW_V) / sizeof(DW_T)) };
    DW_V acc = {0};
    int64_t i = 0;
    for (; i + L <= n; i += L) {
        DW_V va, vb;
        memcpy(&va, a + i, sizeof va);
        memcpy(&vb, b + i, sizeof vb);
        acc += va * vb;
    }
    DW_T sum = 0;
    for (int l = 0; l < L; l++) sum += acc[l];
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}

/* acc[t] += sum over i in [0, n) of dy[i] * in[i + off[t] ]: one flat run's share of dW (dy zero where it is
 * padding). */
AXON_CLONES static void DW_FN(dw_flat_weight)(const DW_T *in, const DW_T *dy, int64_t n, const int64_t *off,
                                              int64_t ntaps, double *acc) {
    for (int64_t t = 0; t < ntaps; t++) acc[t] += (double)DW_FN(dw_dot)(dy, in + off[t], n);
}

/* x (xsp elements, accumulated into) += the taps of w spread back from dy with bounds checks: the adjoint of the
 * forward for strided convolutions or padding wider than the kernel reaches. Along w, tap kw is valid for outputs
 * [lo[kw], hi[kw]); rows of d and h outside x are skipped whole. */
AXON_CLONES static void DW_FN(dw_scatter_plane)(const conv_geom_t *g, const int64_t *lo, const int64_t *hi,
                                                const DW_T *restrict dy, const DW_T *restrict w, DW_T *restrict x) {
    const int64_t Y1 = g->ys[1], Y2 = g->ys[2], X1 = g->xs[1], X2 = g->xs[2], K1 = g->ks[1], K2 = g->ks[2];
    const int64_t s2 = g->stride[2];
    for (int64_t od = 0; od < g->ys[0]; od++)
        for (int64_t oh = 0; oh < Y1; oh++) {
            const DW_T *restrict dr = dy + (od * Y1 + oh) * Y2;
            for (int64_t kd = 0; kd < g->ks[0]; kd++) {
                const int64_t id = od * g->stride[0] - g->pad[0] + kd * g->dil[0];
                if (id < 0 || id >= g->xs[0]) continue;
                for (int64_t kh = 0; kh < K1; kh++) {
                    const int64_t ih = oh * g->stride[1] - g->pad[1] + kh * g->dil[1];
                    if (ih < 0 || ih >= X1) continue;
                    DW_T *restrict xr = x + (id * X1 + ih) * X2;
                    const DW_T *wr = w + (kd * K1 + kh) * K2;
                    for (int64_t kw = 0; kw < K2; kw++) {
                        const int64_t n = hi[kw] - lo[kw];
                        if (n <= 0) continue;
                        const DW_T wv = wr[kw];
                        DW_T *restrict xs = xr + (lo[kw] * s2 + kw * g->dil[2] - g->pad[2]);
                        const DW_T *restrict ds = dr + lo[kw];
                        if (s2 == 1)
                            for (int64_t i = 0; i < n; i++) xs[i] += wv * ds[i];
                        else
                            for (int64_t i = 0; i < n; i++) xs[i * s2] += wv * ds[i];
                    }
                }
            }
        }
}
