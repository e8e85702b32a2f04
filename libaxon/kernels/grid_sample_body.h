/* grid_sample.c's loops for one arithmetic type, included once per type with GS_T (float or double), GS_SUF (a
 * name suffix) and GS_M (the math function suffix: f or nothing) defined. Never installed. */
#define GS_CAT2(a, b) a##b
#define GS_CAT(a, b) GS_CAT2(a, b)
#define GS_NAME(x) GS_CAT(x, GS_SUF)
#define GS_MATH(f) GS_CAT(f, GS_M)
/* The per-point helpers are inlined into each CPU-feature clone of the loops (AXON_CLONES), so that floor, trunc
 * and rint become single instructions there instead of libm calls. */
#define GS_INLINE __attribute__((always_inline)) inline

/* A block's points, tap-major so that a channel's loop over the points reads each array in order: their taps and,
 * for the grid's gradient, each tap weight's derivative along each view dim. Every point has n taps. */
typedef struct GS_NAME(gs_block_) {
    int n;
    int narrow;                           /* the offsets are in off32 (nearest and (tri)linear forward), not off */
    int64_t off[GS_TAPS][GS_BLOCK];       /* element offset in the input plane, -1 outside the input */
    int32_t off32[8][GS_BLOCK];           /* trilinear: 2 x 2 x 2 */
    int sparse;                           /* 3-d: the taps inside the input are few, listed in in_* (tap-major) */
    int n_in;
    int32_t in_j[8 * GS_BLOCK], in_off[8 * GS_BLOCK];
    GS_T in_w[8 * GS_BLOCK];
    GS_T w[GS_TAPS][GS_BLOCK];
    GS_T d[3][GS_TAPS][GS_BLOCK];         /* d w / d coordinate of view dim 0 (D), 1 (H), 2 (W) */
    GS_T mult[3][GS_BLOCK];               /* d coordinate / d grid value, per view dim */
} GS_NAME(gs_block_);

/* Taps of one dimension. */
typedef struct GS_NAME(gs_dim_) {
    int n;
    int64_t idx[4];
    GS_T w[4], dw[4];
    GS_T mult;
} GS_NAME(gs_dim_);

/* Clip to [0, size - 1], a NaN to 0; *g (if asked) is 1 strictly inside, else 0 (PyTorch treats the borders as
 * outside for the gradient). */
GS_INLINE static GS_T GS_NAME(gs_clip_)(GS_T x, int64_t size, GS_T *g) {
    const GS_T hi = (GS_T)(size - 1);
    GS_T c = x > 0 ? x : 0;
    if (c > hi) c = hi;
    if (g) *g = x > 0 && x < hi ? 1 : 0;
    return c;
}

/* Reflect about the borders: the pixel centres (align_corners) or their outer edges; *g is the sign it applies. */
GS_INLINE static GS_T GS_NAME(gs_reflect_)(const gs_args_t *a, GS_T x, int64_t size, GS_T *g) {
    GS_T low, twice;
    if (a->align) {
        if (size <= 1) {
            if (g) *g = 0;
            return 0;
        }
        low = 0, twice = (GS_T)(size - 1) * 2;
    } else {
        low = (GS_T)-0.5, twice = (GS_T)size * 2;
    }
    const GS_T in = x - low, ab = GS_MATH(fabs)(in);
    const GS_T flips = GS_MATH(trunc)(ab / twice);
    const GS_T extra = ab - flips * twice, refl = twice - extra;
    const int more = extra > refl;
    if (g) *g = more ^ (in < 0) ? (GS_T)-1 : (GS_T)1;
    return (more ? refl : extra) + low;
}

/* The padding applied to an input coordinate; *g (if asked) its derivative. */
GS_INLINE static GS_T GS_NAME(gs_pad_)(const gs_args_t *a, GS_T x, int64_t size, GS_T *g) {
    GS_T gr = 1, gc = 1;
    if (a->padding == AXON_GRID_PAD_BORDER) {
        x = GS_NAME(gs_clip_)(x, size, &gc);
    } else if (a->padding == AXON_GRID_PAD_REFLECTION) {
        x = GS_NAME(gs_reflect_)(a, x, size, &gr);
        x = GS_NAME(gs_clip_)(x, size, &gc);
    }
    if (g) *g = gc * gr;
    return x;
}

/* The unnormalized coordinate of grid value v along a dimension of `size`, as PyTorch's float kernel computes it;
 * *scale is its derivative. */
GS_INLINE static GS_T GS_NAME(gs_unnormalize_)(const gs_args_t *a, GS_T v, int64_t size, GS_T *scale) {
    if (a->align) {
        *scale = (GS_T)(size - 1) / 2;
        return (v + 1) * *scale;
    }
    *scale = (GS_T)size / 2;
    return (v + 1) * *scale - (GS_T)0.5;
}

/* An integral coordinate as an index; a huge or non-finite one becomes an index outside every input. */
GS_INLINE static int64_t GS_NAME(gs_index_)(GS_T x) {
    return x > (GS_T)-0x1p40 && x < (GS_T)0x1p40 ? (int64_t)x : GS_FAR;
}

GS_INLINE static int64_t GS_NAME(gs_in_range_)(int64_t i, int64_t size) { return i >= 0 && i < size ? i : -1; }

/* One dimension's taps for grid value v. */
GS_INLINE static GS_NAME(gs_dim_) GS_NAME(gs_dim_taps_)(const gs_args_t *a, GS_T v, int64_t size) {
    GS_NAME(gs_dim_) r;
    GS_T scale;
    const GS_T u = GS_NAME(gs_unnormalize_)(a, v, size, &scale);
    if (a->interp == AXON_GRID_BICUBIC) {
        /* Padding applies to each neighbour's own coordinate; the gradient sees the unnormalization only. */
        const GS_T x0 = GS_MATH(floor)(u), t = u - x0;
        const GS_T A = (GS_T)-0.75, x1 = t + 1, x2 = 1 - t, x3 = x2 + 1;
        r.w[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
        r.w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
        r.w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
        r.w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
        /* d w / d t (PyTorch's get_cubic_coefficients_grad), negated: PyTorch subtracts those terms. */
        GS_T x = -1 - t;
        r.dw[0] = -((-3 * A * x - 10 * A) * x - 8 * A);
        x = -t;
        r.dw[1] = -((-3 * (A + 2) * x - 2 * (A + 3)) * x);
        x = 1 - t;
        r.dw[2] = -((3 * (A + 2) * x - 2 * (A + 3)) * x);
        x = 2 - t;
        r.dw[3] = -((3 * A * x - 10 * A) * x + 8 * A);
        r.n = 4;
        for (int i = 0; i < 4; i++) {
            const GS_T xi = GS_NAME(gs_pad_)(a, x0 - 1 + (GS_T)i, size, NULL);
            r.idx[i] = GS_NAME(gs_in_range_)(GS_NAME(gs_index_)(GS_MATH(trunc)(xi)), size);
        }
        r.mult = scale;
        return r;
    }
    GS_T gpad;
    const GS_T x = GS_NAME(gs_pad_)(a, u, size, &gpad);
    r.mult = a->padding == AXON_GRID_PAD_ZEROS ? scale : gpad * scale;
    if (a->interp == AXON_GRID_NEAREST) {
        r.n = 1, r.w[0] = 1, r.dw[0] = 0;   /* rint: half to even in the default rounding mode, as nearbyint */
        r.idx[0] = GS_NAME(gs_in_range_)(GS_NAME(gs_index_)(GS_MATH(rint)(x)), size);
        return r;
    }
    const GS_T x0 = GS_MATH(floor)(x), t = x - x0;
    const int64_t i0 = GS_NAME(gs_index_)(x0);
    r.n = 2;
    r.idx[0] = GS_NAME(gs_in_range_)(i0, size), r.idx[1] = GS_NAME(gs_in_range_)(i0 + 1, size);
    r.w[0] = 1 - t, r.w[1] = t, r.dw[0] = -1, r.dw[1] = 1;
    return r;
}

/* Point j of block bl, whose grid values start at element `at` (ns values per point): its taps over the view's
 * dims, with the weights' derivatives when `grads`. */
GS_INLINE static void GS_NAME(gs_point_taps_)(const gs_args_t *a, int64_t at, int grads, GS_NAME(gs_block_) *bl,
                                              int64_t j) {
    GS_NAME(gs_dim_) dims[3];
    for (int k = 0; k < 3; k++) {
        if (k < a->first) {
            dims[k].n = 1, dims[k].idx[0] = 0, dims[k].w[0] = 1, dims[k].dw[0] = 0, dims[k].mult = 0;
            continue;
        }
        /* View dim k (D, H, W) reads grid component 2 - k: x is component 0 and runs along W. */
        const GS_T v = (GS_T)axon_spatial_load(a->dt_grid, a->grid, at + (2 - k));
        dims[k] = GS_NAME(gs_dim_taps_)(a, v, a->in_sp[k]);
    }
    for (int k = 0; k < 3; k++) bl->mult[k][j] = dims[k].mult;
    int i = 0;
    for (int z = 0; z < dims[0].n; z++)
        for (int y = 0; y < dims[1].n; y++)
            for (int x = 0; x < dims[2].n; x++, i++) {
                const int64_t iz = dims[0].idx[z], iy = dims[1].idx[y], ix = dims[2].idx[x];
                bl->off[i][j] = iz < 0 || iy < 0 || ix < 0 ? -1 : (iz * a->in_sp[1] + iy) * a->in_sp[2] + ix;
                const GS_T wx = dims[2].w[x], wy = dims[1].w[y], wz = dims[0].w[z];
                bl->w[i][j] = wx * wy * wz;
                if (!grads) continue;
                bl->d[2][i][j] = dims[2].dw[x] * wy * wz;
                bl->d[1][i][j] = wx * dims[1].dw[y] * wz;
                bl->d[0][i][j] = wx * wy * dims[0].dw[z];
            }
    bl->n = i;
}

/* 2-d bilinear and nearest (the common cases): gs_point_taps_'s taps, weights and derivatives, the same values
 * computed straight into the block instead of through per-dimension tap lists. */
GS_INLINE static void GS_NAME(gs_point_taps_2d_)(const gs_args_t *a, int64_t at, int grads, GS_NAME(gs_block_) *bl,
                                                 int64_t j) {
    const int64_t H = a->in_sp[1], W = a->in_sp[2];
    GS_T sx, sy, gpx, gpy;
    const GS_T ux = GS_NAME(gs_unnormalize_)(a, (GS_T)axon_spatial_load(a->dt_grid, a->grid, at), W, &sx);
    const GS_T uy = GS_NAME(gs_unnormalize_)(a, (GS_T)axon_spatial_load(a->dt_grid, a->grid, at + 1), H, &sy);
    const GS_T x = GS_NAME(gs_pad_)(a, ux, W, &gpx), y = GS_NAME(gs_pad_)(a, uy, H, &gpy);
    const int zeros = a->padding == AXON_GRID_PAD_ZEROS;
    bl->mult[0][j] = 0, bl->mult[1][j] = zeros ? sy : gpy * sy, bl->mult[2][j] = zeros ? sx : gpx * sx;
    if (a->interp == AXON_GRID_NEAREST) {
        const int64_t ix = GS_NAME(gs_in_range_)(GS_NAME(gs_index_)(GS_MATH(rint)(x)), W);
        const int64_t iy = GS_NAME(gs_in_range_)(GS_NAME(gs_index_)(GS_MATH(rint)(y)), H);
        bl->off[0][j] = ix < 0 || iy < 0 ? -1 : iy * W + ix;
        bl->w[0][j] = 1;
        if (grads) bl->d[2][0][j] = 0, bl->d[1][0][j] = 0, bl->d[0][0][j] = 0;
        bl->n = 1;
        return;
    }
    const GS_T x0 = GS_MATH(floor)(x), tx = x - x0, y0 = GS_MATH(floor)(y), ty = y - y0;
    const int64_t ix0 = GS_NAME(gs_index_)(x0), iy0 = GS_NAME(gs_index_)(y0);
    const int64_t ix[2] = {GS_NAME(gs_in_range_)(ix0, W), GS_NAME(gs_in_range_)(ix0 + 1, W)};
    const int64_t iy[2] = {GS_NAME(gs_in_range_)(iy0, H), GS_NAME(gs_in_range_)(iy0 + 1, H)};
    const GS_T wx[2] = {1 - tx, tx}, wy[2] = {1 - ty, ty}, dw[2] = {-1, 1};
    for (int yy = 0; yy < 2; yy++)
        for (int xx = 0; xx < 2; xx++) {
            const int i = yy * 2 + xx;
            bl->off[i][j] = ix[xx] < 0 || iy[yy] < 0 ? -1 : iy[yy] * W + ix[xx];
            bl->w[i][j] = wx[xx] * wy[yy] * 1;
            if (!grads) continue;
            bl->d[2][i][j] = dw[xx] * wy[yy] * 1;
            bl->d[1][i][j] = wx[xx] * dw[yy] * 1;
            bl->d[0][i][j] = wx[xx] * wy[yy] * 0;
        }
    bl->n = 4;
}

/* ---- 2-d nearest and bilinear forward taps as vector loops ----
 * The same values as gs_point_taps_2d_ (without the backward's derivatives), computed a block at a time in loops
 * GCC vectorizes: the grid values first gathered into arrays, the padding chosen outside the loop, and indices
 * converted through int32_t, whose conversion AVX2 has (int64_t's it does not): a coordinate is clamped to
 * [-2, size] first, which keeps every outside one outside (NaN included) and the conversion defined. Planes of more
 * than INT32_MAX elements or sides of 2^24 or more (not exact in float) take gs_point_taps_2d_. */
GS_INLINE static int32_t GS_NAME(gs_index32_)(GS_T x, int64_t size) {
    GS_T c = x > (GS_T)-2 ? x : (GS_T)-2;
    c = c < (GS_T)size ? c : (GS_T)size;
    return (int32_t)c;
}
/* gs_unnormalize_ as (v + 1) * u[0] - u[1], the same operations: its constants hoisted out of the loops, where
 * reading them through `a` inside kept GCC's vector loops from running (it could not rule out that the block's stores
 * alias the arguments, and the scalar loops ran instead: 2.6x CPU's time for op_db's grid_sampler_2d samples). */
GS_INLINE static void GS_NAME(gs_unnormalize_consts_)(const gs_args_t *a, int64_t size, GS_T *u) {
    u[0] = a->align ? (GS_T)(size - 1) / 2 : (GS_T)size / 2;
    u[1] = a->align ? (GS_T)0 : (GS_T)0.5;
}
/* k if it indexes a dimension of `size`, else -1 */
GS_INLINE static int32_t GS_NAME(gs_in_range32_)(int32_t k, int64_t size) {
    return (uint32_t)k < (uint32_t)size ? k : -1;
}
#define GS_PAD_ZEROS(x, size, r) (x)
#define GS_PAD_BORDER(x, size, r) GS_NAME(gs_clip_)((x), (size), NULL)
/* gs_reflect_ with its per-dimension constants hoisted (r[0] low, r[1] twice, r[2] 1 where align leaves no room) */
GS_INLINE static GS_T GS_NAME(gs_reflect_hoisted_)(GS_T x, const GS_T *r) {
    const GS_T in = x - r[0], ab = GS_MATH(fabs)(in);
    const GS_T flips = GS_MATH(trunc)(ab / r[1]);
    const GS_T extra = ab - flips * r[1], refl = r[1] - extra;
    return r[2] != 0 ? (GS_T)0 : (extra > refl ? refl : extra) + r[0];
}
/* gs_reflect_hoisted_'s constants for a dimension of `size` */
GS_INLINE static void GS_NAME(gs_reflect_consts_)(const gs_args_t *a, int64_t size, GS_T *r) {
    r[0] = a->align ? 0 : (GS_T)-0.5, r[1] = a->align ? (GS_T)(size - 1) * 2 : (GS_T)size * 2;
    r[2] = a->align && size <= 1;
}
#define GS_PAD_REFLECTION(x, size, r) GS_NAME(gs_clip_)(GS_NAME(gs_reflect_hoisted_)((x), (r)), (size), NULL)
/* PyTorch's 3-d CPU kernel is scalar code: std::min and std::max clip a NaN to the far border (its 2-d kernel, vector
 * code, clips it to 0 as gs_clip_ does), and its taps outside the input are skipped, so a NaN or infinite coordinate
 * under zeros padding adds nothing (the 3-d sample loop selects the product instead of the value). */
GS_INLINE static GS_T GS_NAME(gs_clip_3d_)(GS_T x, int64_t size) {
    const GS_T hi = (GS_T)(size - 1);
    const GS_T c = x < 0 ? 0 : x;
    return c < hi ? c : hi;
}
#define GS_PAD_BORDER_3D(x, size, r) GS_NAME(gs_clip_3d_)((x), (size))
#define GS_PAD_REFLECTION_3D(x, size, r) GS_NAME(gs_clip_3d_)(GS_NAME(gs_reflect_hoisted_)((x), (r)), (size))
#define GS_TAPS_2D_LOOP(PAD)                                                                                   \
    do {                                                                                                       \
        if (a->interp == AXON_GRID_NEAREST) {                                                                  \
            for (int64_t j = 0; j < m; j++) {                                                                  \
                const GS_T x = PAD((gx[j] + 1) * ux[0] - ux[1], W, rx);                         \
                const GS_T y = PAD((gy[j] + 1) * uy[0] - uy[1], H, ry);                         \
                const int32_t ix = GS_NAME(gs_in_range32_)(GS_NAME(gs_index32_)(GS_MATH(rint)(x), W), W);      \
                const int32_t iy = GS_NAME(gs_in_range32_)(GS_NAME(gs_index32_)(GS_MATH(rint)(y), H), H);      \
                bl->off32[0][j] = ix < 0 || iy < 0 ? -1 : iy * (int32_t)W + ix;                                \
                bl->w[0][j] = 1;                                                                               \
            }                                                                                                  \
            bl->n = 1;                                                                                         \
            break;                                                                                             \
        }                                                                                                      \
        for (int64_t j = 0; j < m; j++) {                                                                      \
            const GS_T x = PAD((gx[j] + 1) * ux[0] - ux[1], W, rx);                             \
            const GS_T y = PAD((gy[j] + 1) * uy[0] - uy[1], H, ry);                             \
            const GS_T x0 = GS_MATH(floor)(x), tx = x - x0, y0 = GS_MATH(floor)(y), ty = y - y0;               \
            const int32_t kx = GS_NAME(gs_index32_)(x0, W), ky = GS_NAME(gs_index32_)(y0, H);                  \
            /* 32-bit lanes throughout (the top-left tap's offset wraps where it is unused): with mixed widths \
             * GCC vectorized this loop for AVX2 but not for AVX-512, whose masks it could not convert */     \
            const uint32_t o = (uint32_t)ky * w32 + (uint32_t)kx;                                              \
            const int32_t inx0 = (uint32_t)kx < w32, inx1 = (uint32_t)kx + 1 < w32;                            \
            const int32_t iny0 = (uint32_t)ky < h32, iny1 = (uint32_t)ky + 1 < h32;                            \
            bl->off32[0][j] = inx0 & iny0 ? (int32_t)o : -1;                                                   \
            bl->off32[1][j] = inx1 & iny0 ? (int32_t)(o + 1) : -1;                                             \
            bl->off32[2][j] = inx0 & iny1 ? (int32_t)(o + w32) : -1;                                           \
            bl->off32[3][j] = inx1 & iny1 ? (int32_t)(o + w32 + 1) : -1;                                       \
            bl->w[0][j] = (1 - tx) * (1 - ty) * 1, bl->w[1][j] = tx * (1 - ty) * 1;                            \
            bl->w[2][j] = (1 - tx) * ty * 1, bl->w[3][j] = tx * ty * 1;                                        \
        }                                                                                                      \
        bl->n = 4;                                                                                             \
    } while (0)

GS_INLINE static void GS_NAME(gs_block_taps_2d_forward_)(const gs_args_t *a, int64_t at0, int64_t m,
                                                        GS_NAME(gs_block_) *bl) {
    const int64_t H = a->in_sp[1], W = a->in_sp[2];
    const uint32_t w32 = (uint32_t)W, h32 = (uint32_t)H;
    GS_T gx[GS_BLOCK], gy[GS_BLOCK], ux[2], uy[2];
    GS_NAME(gs_unnormalize_consts_)(a, W, ux), GS_NAME(gs_unnormalize_consts_)(a, H, uy);
    if (a->dt_grid == (sizeof(GS_T) == 4 ? AXON_FLOAT32 : AXON_FLOAT64)) {
        const GS_T *g = (const GS_T *)a->grid + at0;
        for (int64_t j = 0; j < m; j++) gx[j] = g[2 * j], gy[j] = g[2 * j + 1];
    } else {
        for (int64_t j = 0; j < m; j++) {
            gx[j] = (GS_T)axon_spatial_load(a->dt_grid, a->grid, at0 + 2 * j);
            gy[j] = (GS_T)axon_spatial_load(a->dt_grid, a->grid, at0 + 2 * j + 1);
        }
    }
    GS_T rx[3], ry[3];
    GS_NAME(gs_reflect_consts_)(a, W, rx), GS_NAME(gs_reflect_consts_)(a, H, ry);
    if (a->padding == AXON_GRID_PAD_ZEROS)
        GS_TAPS_2D_LOOP(GS_PAD_ZEROS);
    else if (a->padding == AXON_GRID_PAD_BORDER)
        GS_TAPS_2D_LOOP(GS_PAD_BORDER);
    else
        GS_TAPS_2D_LOOP(GS_PAD_REFLECTION);
}

/* The same for 3-d nearest and trilinear: gs_point_taps_'s values, tap (z, y, x) at index 4 z + 2 y + x. */
#define GS_TAPS_3D_LOOP(PAD)                                                                                   \
    do {                                                                                                       \
        if (a->interp == AXON_GRID_NEAREST) {                                                                  \
            for (int64_t j = 0; j < m; j++) {                                                                  \
                const GS_T x = PAD((gx[j] + 1) * ux[0] - ux[1], W, rx);                         \
                const GS_T y = PAD((gy[j] + 1) * uy[0] - uy[1], H, ry);                         \
                const GS_T z = PAD((gz[j] + 1) * uz[0] - uz[1], D, rz);                         \
                const int32_t ix = GS_NAME(gs_in_range32_)(GS_NAME(gs_index32_)(GS_MATH(rint)(x), W), W);      \
                const int32_t iy = GS_NAME(gs_in_range32_)(GS_NAME(gs_index32_)(GS_MATH(rint)(y), H), H);      \
                const int32_t iz = GS_NAME(gs_in_range32_)(GS_NAME(gs_index32_)(GS_MATH(rint)(z), D), D);      \
                bl->off32[0][j] = ix < 0 || iy < 0 || iz < 0 ? -1 : (iz * (int32_t)H + iy) * (int32_t)W + ix;  \
                bl->w[0][j] = 1;                                                                               \
            }                                                                                                  \
            bl->n = 1;                                                                                         \
            break;                                                                                             \
        }                                                                                                      \
        for (int64_t j = 0; j < m; j++) {                                                                      \
            const GS_T x = PAD((gx[j] + 1) * ux[0] - ux[1], W, rx);                             \
            const GS_T y = PAD((gy[j] + 1) * uy[0] - uy[1], H, ry);                             \
            const GS_T z = PAD((gz[j] + 1) * uz[0] - uz[1], D, rz);                             \
            const GS_T x0 = GS_MATH(floor)(x), tx = x - x0, y0 = GS_MATH(floor)(y), ty = y - y0;               \
            const GS_T z0 = GS_MATH(floor)(z), tz = z - z0;                                                    \
            const int32_t kx = GS_NAME(gs_index32_)(x0, W), ky = GS_NAME(gs_index32_)(y0, H);                  \
            const int32_t kz = GS_NAME(gs_index32_)(z0, D);                                                    \
            const int32_t ix0 = GS_NAME(gs_in_range32_)(kx, W), ix1 = GS_NAME(gs_in_range32_)(kx + 1, W);      \
            const int32_t iy0 = GS_NAME(gs_in_range32_)(ky, H), iy1 = GS_NAME(gs_in_range32_)(ky + 1, H);      \
            const int32_t iz0 = GS_NAME(gs_in_range32_)(kz, D), iz1 = GS_NAME(gs_in_range32_)(kz + 1, D);      \
            /* a row's offset, -1 when its z or y is outside; a tap's, -1 when its x is too */                 \
            const int32_t r00 = iz0 < 0 || iy0 < 0 ? -1 : (iz0 * (int32_t)H + iy0) * (int32_t)W;               \
            const int32_t r01 = iz0 < 0 || iy1 < 0 ? -1 : (iz0 * (int32_t)H + iy1) * (int32_t)W;               \
            const int32_t r10 = iz1 < 0 || iy0 < 0 ? -1 : (iz1 * (int32_t)H + iy0) * (int32_t)W;               \
            const int32_t r11 = iz1 < 0 || iy1 < 0 ? -1 : (iz1 * (int32_t)H + iy1) * (int32_t)W;               \
            bl->off32[0][j] = r00 < 0 || ix0 < 0 ? -1 : r00 + ix0;                                             \
            bl->off32[1][j] = r00 < 0 || ix1 < 0 ? -1 : r00 + ix1;                                             \
            bl->off32[2][j] = r01 < 0 || ix0 < 0 ? -1 : r01 + ix0;                                             \
            bl->off32[3][j] = r01 < 0 || ix1 < 0 ? -1 : r01 + ix1;                                             \
            bl->off32[4][j] = r10 < 0 || ix0 < 0 ? -1 : r10 + ix0;                                             \
            bl->off32[5][j] = r10 < 0 || ix1 < 0 ? -1 : r10 + ix1;                                             \
            bl->off32[6][j] = r11 < 0 || ix0 < 0 ? -1 : r11 + ix0;                                             \
            bl->off32[7][j] = r11 < 0 || ix1 < 0 ? -1 : r11 + ix1;                                             \
            /* gs_point_taps_'s products, in its order: wx * wy * wz */                                        \
            const GS_T wx0 = 1 - tx, wy0 = 1 - ty, wz0 = 1 - tz;                                               \
            bl->w[0][j] = wx0 * wy0 * wz0, bl->w[1][j] = tx * wy0 * wz0;                                       \
            bl->w[2][j] = wx0 * ty * wz0, bl->w[3][j] = tx * ty * wz0;                                         \
            bl->w[4][j] = wx0 * wy0 * tz, bl->w[5][j] = tx * wy0 * tz;                                         \
            bl->w[6][j] = wx0 * ty * tz, bl->w[7][j] = tx * ty * tz;                                           \
        }                                                                                                      \
        bl->n = 8;                                                                                             \
    } while (0)

GS_INLINE static void GS_NAME(gs_block_taps_3d_forward_)(const gs_args_t *a, int64_t at0, int64_t m,
                                                        GS_NAME(gs_block_) *bl) {
    const int64_t D = a->in_sp[0], H = a->in_sp[1], W = a->in_sp[2];
    GS_T gx[GS_BLOCK], gy[GS_BLOCK], gz[GS_BLOCK], ux[2], uy[2], uz[2];
    GS_NAME(gs_unnormalize_consts_)(a, W, ux), GS_NAME(gs_unnormalize_consts_)(a, H, uy);
    GS_NAME(gs_unnormalize_consts_)(a, D, uz);
    if (a->dt_grid == (sizeof(GS_T) == 4 ? AXON_FLOAT32 : AXON_FLOAT64)) {
        const GS_T *g = (const GS_T *)a->grid + at0;
        for (int64_t j = 0; j < m; j++) gx[j] = g[3 * j], gy[j] = g[3 * j + 1], gz[j] = g[3 * j + 2];
    } else {
        for (int64_t j = 0; j < m; j++) {
            gx[j] = (GS_T)axon_spatial_load(a->dt_grid, a->grid, at0 + 3 * j);
            gy[j] = (GS_T)axon_spatial_load(a->dt_grid, a->grid, at0 + 3 * j + 1);
            gz[j] = (GS_T)axon_spatial_load(a->dt_grid, a->grid, at0 + 3 * j + 2);
        }
    }
    GS_T rx[3], ry[3], rz[3];
    GS_NAME(gs_reflect_consts_)(a, W, rx), GS_NAME(gs_reflect_consts_)(a, H, ry), GS_NAME(gs_reflect_consts_)(a, D, rz);
    if (a->padding == AXON_GRID_PAD_ZEROS)
        GS_TAPS_3D_LOOP(GS_PAD_ZEROS);
    else if (a->padding == AXON_GRID_PAD_BORDER)
        GS_TAPS_3D_LOOP(GS_PAD_BORDER_3D);
    else
        GS_TAPS_3D_LOOP(GS_PAD_REFLECTION_3D);
}
#undef GS_TAPS_3D_LOOP
#undef GS_PAD_BORDER_3D
#undef GS_PAD_REFLECTION_3D
#undef GS_TAPS_2D_LOOP
#undef GS_PAD_ZEROS
#undef GS_PAD_BORDER
#undef GS_PAD_REFLECTION

/* PyTorch's 3-d CPU kernel skips the taps outside the input, so a grid mostly outside costs it little; the vector
 * loops load every tap. When at most a quarter of a trilinear block's taps are inside, they are listed (tap-major,
 * so each point still sums its taps in tap order) for a loop over those alone. Skipping an outside tap is what the
 * 3-d loop does anyway (see gs_clip_3d_), so both give the same bits. */
GS_INLINE static void GS_NAME(gs_list_taps_inside_)(GS_NAME(gs_block_) *bl, int64_t m) {
    bl->sparse = 0;
    if (bl->n != 8) return;   /* nearest: one load a point, and it copies -0 where a sum would give +0 */
    int inside = 0;
    for (int k = 0; k < bl->n; k++)
        for (int64_t j = 0; j < m; j++) inside += bl->off32[k][j] >= 0;
    bl->sparse = inside * 4 <= bl->n * m;
    if (!bl->sparse) return;
    int e = 0;
    for (int k = 0; k < bl->n; k++)
        for (int64_t j = 0; j < m; j++)
            if (bl->off32[k][j] >= 0) {
                bl->in_j[e] = (int32_t)j, bl->in_off[e] = bl->off32[k][j], bl->in_w[e] = bl->w[k][j];
                e++;
            }
    bl->n_in = e;
}

/* Tap k of point j's offset, from whichever array the block filled. */
#define GS_OFF(bl, k, j) ((bl)->narrow ? (int64_t)(bl)->off32[k][j] : (bl)->off[k][j])

/* The taps of points [p0, p0 + m) of batch n: in off32 (bl->narrow) for nearest, bilinear and trilinear without the
 * weights' derivatives, in off otherwise. */
GS_INLINE static void GS_NAME(gs_block_taps_)(const gs_args_t *a, int64_t n, int64_t p0, int64_t m, int grads,
                                    GS_NAME(gs_block_) *bl) {
    const int64_t at0 = (n * a->osz + p0) * a->ns;
    if (a->interp != AXON_GRID_BICUBIC && !grads && a->isz <= INT32_MAX && a->in_sp[0] < (1 << 24) &&
        a->in_sp[1] < (1 << 24) && a->in_sp[2] < (1 << 24)) {
        bl->narrow = 1;
        if (a->ns == 2) {
            GS_NAME(gs_block_taps_2d_forward_)(a, at0, m, bl);
            bl->sparse = 0;
        } else {
            GS_NAME(gs_block_taps_3d_forward_)(a, at0, m, bl);
            GS_NAME(gs_list_taps_inside_)(bl, m);
        }
        return;
    }
    bl->narrow = 0, bl->sparse = 0;
    if (a->ns == 2 && a->interp != AXON_GRID_BICUBIC) {
        for (int64_t j = 0; j < m; j++) GS_NAME(gs_point_taps_2d_)(a, at0 + j * 2, grads, bl, j);
        return;
    }
    for (int64_t j = 0; j < m; j++) GS_NAME(gs_point_taps_)(a, at0 + j * a->ns, grads, bl, j);
}

/* Nearest's and (tri)linear's loops over offsets OFF (off32, or off for the blocks that have no off32) of type IT: an
 * outside tap (-1) loads element 0 (a->isz > 0 here) and selects 0 after the load, so the loads are unconditional
 * and the loop is one of gathers. The offset goes through bit arithmetic, not `o >= 0 ? o : 0`, which GCC threads
 * back into a branch around the load. GCC vectorizes the int32_t loops only: AVX2 has no 64-bit arithmetic shift. */
#define GS_INSIDE(o, IT) ((o) & ~((o) >> (sizeof(IT) * 8 - 1)))
#define GS_NEAREST_LOOP(LOAD, OFF, IT)                                                                         \
    for (int64_t j = 0; j < m; j++) {                                                                          \
        const IT o = OFF[0][j];                                                                                \
        const GS_T v = LOAD(GS_INSIDE(o, IT));                                                                 \
        acc[j] = o >= 0 ? v : (GS_T)0;                                                                         \
    }
#define GS_LINEAR_LOOP(LOAD, OFF, IT, K, SKIP)                                                                 \
    for (int64_t j = 0; j < m; j++) {                                                                          \
        GS_T sum = 0;                                                                                          \
        for (int k = 0; k < (K); k++) {                                                                        \
            const IT o = OFF[k][j];                                                                            \
            const GS_T v = LOAD(GS_INSIDE(o, IT));                                                             \
            sum += (SKIP) ? (o >= 0 ? bl->w[k][j] * v : (GS_T)0) : bl->w[k][j] * (o >= 0 ? v : (GS_T)0);       \
        }                                                                                                      \
        acc[j] = sum;                                                                                          \
    }

/* One channel's sampled values of a block's m points into acc (LOAD(i) reads element i of the channel's plane):
 * the taps' weighted sum in tap order. A NaN or infinite coordinate under zeros padding makes every weight NaN, so
 * the value is NaN as on PyTorch CPU's 2-d kernel; in 3-d, outside taps add nothing, as in CPU's 3-d kernel. Nearest
 * copies its one element instead (-0 and NaN payloads kept). */
#define GS_SAMPLE_BLOCK(LOAD)                                                                                  \
    do {                                                                                                       \
        if (bl->sparse) {                                                                                      \
            for (int64_t j = 0; j < m; j++) acc[j] = 0;                                                        \
            for (int e = 0; e < bl->n_in; e++) acc[bl->in_j[e]] += bl->in_w[e] * LOAD(bl->in_off[e]);          \
            break;                                                                                             \
        }                                                                                                      \
        if (a->interp == AXON_GRID_NEAREST) {                                                                  \
            if (bl->narrow)                                                                                    \
                GS_NEAREST_LOOP(LOAD, bl->off32, int32_t)                                                      \
            else                                                                                               \
                GS_NEAREST_LOOP(LOAD, bl->off, int64_t)                                                        \
            break;                                                                                             \
        }                                                                                                      \
        if (bl->n == 4) { /* bilinear: the trip count fixed at 4 */                                            \
            if (bl->narrow)                                                                                    \
                GS_LINEAR_LOOP(LOAD, bl->off32, int32_t, 4, 0)                                                 \
            else                                                                                               \
                GS_LINEAR_LOOP(LOAD, bl->off, int64_t, 4, 0)                                                   \
            break;                                                                                             \
        }                                                                                                      \
        if (bl->n == 8 && bl->narrow) { /* trilinear */                                                        \
            GS_LINEAR_LOOP(LOAD, bl->off32, int32_t, 8, 1)                                                     \
            break;                                                                                             \
        }                                                                                                      \
        for (int64_t j = 0; j < m; j++) {                                                                      \
            GS_T sum = 0;                                                                                      \
            for (int k = 0; k < bl->n; k++)                                                                    \
                sum += bl->w[k][j] * (bl->off[k][j] >= 0 ? LOAD(bl->off[k][j]) : (GS_T)0);                     \
            acc[j] = sum;                                                                                      \
        }                                                                                                      \
    } while (0)

/* Forward over blocks [begin, end) (block b = batch b / nblk, points from (b % nblk) * GS_BLOCK). */
AXON_CLONES static void GS_NAME(gs_forward_range_)(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const gs_args_t *a = ctx;
    GS_NAME(gs_block_) blk, *bl = &blk;
    blk.n = 0;
    GS_T acc[GS_BLOCK];
    const int all_f32 = a->dt_in == AXON_FLOAT32 && a->dt_out == AXON_FLOAT32;
    const int all_f64 = a->dt_in == AXON_FLOAT64 && a->dt_out == AXON_FLOAT64 && sizeof(GS_T) == 8;
    const axon_dtype_t half = a->dt_in == a->dt_out && (a->dt_in == AXON_FLOAT16 || a->dt_in == AXON_BFLOAT16)
                                  ? a->dt_in
                                  : AXON_DTYPE_COUNT;
    /* bilinear and trilinear float32 and float64 with AVX-512's gathers (grid_sample_gather.h), nearest with its
     * copy loop */
    const int gather = all_f32 && sizeof(GS_T) == 4 && a->gather && a->interp == AXON_GRID_BILINEAR;
    const int gather64 = all_f64 && a->gather && a->interp == AXON_GRID_BILINEAR;
    for (int64_t b = begin; b < end; b++) {
        const int64_t n = b / a->nblk, p0 = b % a->nblk * GS_BLOCK;
        const int64_t m = a->osz - p0 < GS_BLOCK ? a->osz - p0 : GS_BLOCK;
        GS_NAME(gs_block_taps_)(a, n, p0, m, 0, bl);
        for (int64_t c = 0; c < a->C; c++) {
            const int64_t src = (n * a->C + c) * a->isz, dst = (n * a->C + c) * a->osz + p0;
            if (all_f32) {
                const float *s = (const float *)a->in + src;
                float *d = (float *)a->out + dst;
#define GS_LOAD_F32(i) (GS_T)s[i]
#ifdef AXON_GS_GATHER
                if (gather && bl->narrow && !bl->sparse && (bl->n == 4 || bl->n == 8))
                    axon_gs_taps_f32_avx512(s, bl->off32[0], (const float *)bl->w[0], GS_BLOCK, bl->n, bl->n == 8, m,
                                            (float *)acc);
                else
#endif
                    GS_SAMPLE_BLOCK(GS_LOAD_F32);
#undef GS_LOAD_F32
                for (int64_t j = 0; j < m; j++) d[j] = (float)acc[j];
            } else if (all_f64) {
                const double *s = (const double *)a->in + src;
                double *d = (double *)a->out + dst;
#define GS_LOAD_F64(i) (GS_T)s[i]
#ifdef AXON_GS_GATHER
                if (gather64 && bl->narrow && !bl->sparse && (bl->n == 4 || bl->n == 8))
                    axon_gs_taps_f64_avx512(s, bl->off32[0], (const double *)bl->w[0], GS_BLOCK, bl->n, bl->n == 8,
                                            m, (double *)acc);
                else
#endif
                    GS_SAMPLE_BLOCK(GS_LOAD_F64);
#undef GS_LOAD_F64
                for (int64_t j = 0; j < m; j++) d[j] = (double)acc[j];
            } else if (half != AXON_DTYPE_COUNT && sizeof(GS_T) == 4) {
                /* the half types as they lie: axon_spatial_load's switch and float64 per tap kept the taps' loop
                 * scalar (float16 took 1.8x bfloat16's time, bfloat16 itself 2.4x float32's) */
                const uint16_t *s = (const uint16_t *)a->in + src;
                uint16_t *d = (uint16_t *)a->out + dst;
                if (half == AXON_FLOAT16) {
#define GS_LOAD_F16(i) (GS_T)axon_fk_load(AXON_FK_F16, s, i)
                    GS_SAMPLE_BLOCK(GS_LOAD_F16);
#undef GS_LOAD_F16
                    for (int64_t j = 0; j < m; j++) axon_fk_store(AXON_FK_F16, d, j, (float)acc[j]);
                } else {
#define GS_LOAD_BF16(i) (GS_T)axon_fk_load(AXON_FK_BF16, s, i)
                    GS_SAMPLE_BLOCK(GS_LOAD_BF16);
#undef GS_LOAD_BF16
                    for (int64_t j = 0; j < m; j++) axon_fk_store(AXON_FK_BF16, d, j, (float)acc[j]);
                }
            } else {
#define GS_LOAD_ANY(i) (GS_T)axon_spatial_load(a->dt_in, a->in, src + (i))
                GS_SAMPLE_BLOCK(GS_LOAD_ANY);
#undef GS_LOAD_ANY
                for (int64_t j = 0; j < m; j++) axon_spatial_store(a->dt_out, a->out, dst + j, (double)acc[j]);
            }
        }
    }
}

/* What tap k of point j adds to grad_in for grad_out g: nearest copies g (no rounding through a product). */
#define GS_GIN_ADD(k, j, g) (a->interp == AXON_GRID_NEAREST ? (g) : bl->w[k][j] * (g))

/* The fk kind of a float32, float16 or bfloat16 dtype, or -1. */
#ifndef GS_FK_KIND
#define GS_FK_KIND(d)                                                                                        \
    ((d) == AXON_FLOAT32 ? AXON_FK_F32 : (d) == AXON_FLOAT16 ? AXON_FK_F16 : (d) == AXON_BFLOAT16 ? AXON_FK_BF16 : -1)
#endif
/* grad_in over planes [begin, end) (plane = n * C + c): zero each, then scatter its grad_out in point order (each
 * point's taps in tap order). The taps of a block serve every plane of the range with the same n. */
AXON_CLONES static void GS_NAME(gs_grad_in_range_)(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const gs_args_t *a = ctx;
    GS_NAME(gs_block_) blk, *bl = &blk;
    blk.n = 0;
    for (int64_t q = begin; q < end; q++) axon_spatial_zero(a->dt_gin, a->gin, q * a->isz, a->isz);
    /* float32 grad_in (the glue's for the half types too, which would round at every addition) */
    const int f32 = a->dt_gin == AXON_FLOAT32 && GS_FK_KIND(a->dt_out) != -1;
    for (int64_t q0 = begin; q0 < end;) {
        const int64_t n = q0 / a->C, q1 = (n + 1) * a->C < end ? (n + 1) * a->C : end;
        for (int64_t p0 = 0; p0 < a->osz; p0 += GS_BLOCK) {
            const int64_t m = a->osz - p0 < GS_BLOCK ? a->osz - p0 : GS_BLOCK;
            GS_NAME(gs_block_taps_)(a, n, p0, m, 0, bl);
            for (int64_t q = q0; q < q1; q++) {
                if (f32) {
                    const void *go = (const char *)a->gout + (q * a->osz + p0) * (int64_t)axon_dtype_size(a->dt_out);
                    const int kind = GS_FK_KIND(a->dt_out);
                    float *gi = (float *)a->gin + q * a->isz;
                    for (int64_t j = 0; j < m; j++) {
                        const GS_T g = kind == AXON_FK_F32   ? (GS_T)axon_fk_load(AXON_FK_F32, go, j)
                                       : kind == AXON_FK_F16 ? (GS_T)axon_fk_load(AXON_FK_F16, go, j)
                                                             : (GS_T)axon_fk_load(AXON_FK_BF16, go, j);
                        for (int k = 0; k < bl->n; k++) {
                            const int64_t o = GS_OFF(bl, k, j);
                            if (o >= 0) gi[o] = (float)((GS_T)gi[o] + GS_GIN_ADD(k, j, g));
                        }
                    }
                    continue;
                }
                for (int64_t j = 0; j < m; j++) {
                    const GS_T g = (GS_T)axon_spatial_load(a->dt_out, a->gout, q * a->osz + p0 + j);
                    for (int k = 0; k < bl->n; k++) {
                        const int64_t o = GS_OFF(bl, k, j);
                        if (o < 0) continue;
                        const int64_t i = q * a->isz + o;
                        const GS_T old = (GS_T)axon_spatial_load(a->dt_gin, a->gin, i);
                        axon_spatial_store(a->dt_gin, a->gin, i, (double)(old + GS_GIN_ADD(k, j, g)));
                    }
                }
            }
        }
        q0 = q1;
    }
}

/* grad_grid over blocks [begin, end): per point, the sum over channels (in channel order, each channel's taps in
 * tap order) of grad_out times the input value times the derivative of its weight along each coordinate. */
AXON_CLONES static void GS_NAME(gs_grad_grid_range_)(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const gs_args_t *a = ctx;
    GS_NAME(gs_block_) blk, *bl = &blk;
    blk.n = 0;
    GS_T acc[3][GS_BLOCK], v[GS_BLOCK], g[GS_BLOCK];
    const int f32 = a->dt_in == AXON_FLOAT32 && a->dt_out == AXON_FLOAT32;
    const int half = a->dt_in == a->dt_out && a->dt_in != AXON_FLOAT32 ? GS_FK_KIND(a->dt_in) : -1;
    for (int64_t b = begin; b < end; b++) {
        const int64_t n = b / a->nblk, p0 = b % a->nblk * GS_BLOCK;
        const int64_t m = a->osz - p0 < GS_BLOCK ? a->osz - p0 : GS_BLOCK;
        memset(acc, 0, sizeof acc);
        if (a->interp != AXON_GRID_NEAREST) {
            GS_NAME(gs_block_taps_)(a, n, p0, m, 1, bl);
            for (int64_t c = 0; c < a->C; c++) {
                const int64_t src = (n * a->C + c) * a->isz, go = (n * a->C + c) * a->osz + p0;
                const uint16_t *go16 = (const uint16_t *)a->gout + go, *in16 = (const uint16_t *)a->in + src;
                for (int64_t j = 0; j < m; j++)
                    g[j] = f32                  ? (GS_T)((const float *)a->gout)[go + j]
                           : half == AXON_FK_F16  ? (GS_T)axon_fk_load(AXON_FK_F16, go16, j)
                           : half == AXON_FK_BF16 ? (GS_T)axon_fk_load(AXON_FK_BF16, go16, j)
                                                  : (GS_T)axon_spatial_load(a->dt_out, a->gout, go + j);
                for (int k = 0; k < bl->n; k++) {
                    const int64_t *off = bl->off[k];
                    if (f32) {
                        const float *in32 = (const float *)a->in + src;
                        for (int64_t j = 0; j < m; j++) v[j] = off[j] >= 0 ? (GS_T)in32[off[j]] : (GS_T)0;
                    } else if (half == AXON_FK_F16) {
                        for (int64_t j = 0; j < m; j++)
                            v[j] = off[j] >= 0 ? (GS_T)axon_fk_load(AXON_FK_F16, in16, off[j]) : (GS_T)0;
                    } else if (half == AXON_FK_BF16) {
                        for (int64_t j = 0; j < m; j++)
                            v[j] = off[j] >= 0 ? (GS_T)axon_fk_load(AXON_FK_BF16, in16, off[j]) : (GS_T)0;
                    } else {
                        for (int64_t j = 0; j < m; j++)
                            v[j] = off[j] >= 0 ? (GS_T)axon_spatial_load(a->dt_in, a->in, src + off[j]) : (GS_T)0;
                    }
                    for (int d = a->first; d < 3; d++) {
                        const GS_T *dw = bl->d[d][k];
                        for (int64_t j = 0; j < m; j++) acc[d][j] += v[j] * dw[j] * g[j];
                    }
                }
            }
        }
        for (int64_t j = 0; j < m; j++) {
            const int64_t at = (n * a->osz + p0 + j) * a->ns;
            for (int d = a->first; d < 3; d++) {
                const GS_T mult = a->interp == AXON_GRID_NEAREST ? 0 : bl->mult[d][j];
                axon_spatial_store(a->dt_ggrid, a->ggrid, at + (2 - d), (double)(mult * acc[d][j]));
            }
        }
    }
}

#undef GS_SAMPLE_BLOCK
#undef GS_NEAREST_LOOP
#undef GS_LINEAR_LOOP
#undef GS_INSIDE
#undef GS_OFF
#undef GS_GIN_ADD
#undef GS_MATH
#undef GS_INLINE
#undef GS_NAME
#undef GS_CAT
#undef GS_CAT2
