/* bfloat16 GEMM on AMX tiles, for gemm.c: C = alpha * A @ B + beta * C + bias, float32 accumulation, one rounding.
 *
 * Why: on this project's machine (docs/benchmarks.md, "Against this host's peaks") AMX's tdpbf16ps peaks at about
 * 3700 GFLOP/s per core, and oneDNN 2.6's AMX brgemm reaches 530-550 of it on one thread, less than PyTorch's newer
 * oneDNN; large bf16 products ran 1.3-1.5x slower than torch CPU.
 *
 * Layout: B is packed once per product (axon_gemm_amx_pack_b, its panels spread over the pool) into panels of 32
 * columns; each 32-deep chunk of a panel is two tiles of 16 rows x 64 bytes in AMX's pair layout (row r holds, per
 * column, the elements of depth 2r and 2r+1). Each participant packs blocks of rows of A (mc rows, the whole depth,
 * sized to stay in L2) into 32-row units of 16 x 32 tiles, depth slice by depth slice (amx_a_chunk). For a group of
 * nb panels it then runs the depth slices in turn; for each panel of the group the slice of the panel (kc x 32, small
 * enough to stay in L1) multiplies every unit of the block: four accumulator tiles (2 row tiles of A x 2 column tiles
 * of B), loaded from and stored to the group's float32 partial sums between slices, and after the last slice finished
 * (alpha, beta * C, bias, rounding to nearest even) with vector code. Depth, row and column tails are zero padded in
 * the packed copies, so the tile loop has no edge cases. A's tiles are loaded with the streaming hint (tileloaddt1):
 * each is read once per panel, and without the hint they pushed the panel's slice out of L1. The slice the next
 * panel will read is in packed B, too large for L2, so it came from L3 while the tiles waited; each unit's product
 * now prefetches a share of it into L2.
 *
 * Every element of C is one sum in a fixed order whatever the split over threads, so results are the same bits for
 * any thread count. The tile state needs the kernel's permission (arch_prctl ARCH_REQ_XCOMP_PERM, Linux 5.16+), asked
 * once; without it, or on a CPU without AMX-BF16, axon_gemm_amx_available() says 0 and gemm.c takes another path. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "gemm_impl.h"

#define AMX_CHUNK 1024 /* uint16 per 32-deep chunk of a packed panel or row block: two 16 x 32 tiles */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AMX_X86 1
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX_VEC_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

/* 16 floats to bfloat16 exactly as axon_f32_to_bf16 does (nearest even; a NaN made quiet, not rounded). */
AMX_VEC_TARGET static inline __m256i amx_to_bf16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    const __m512i w = _mm512_mask_or_epi32(u, nan, u, _mm512_set1_epi32(0x00400000));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(w, 16), _mm512_set1_epi32(1));
    const __m512i bias = _mm512_maskz_add_epi32((__mmask16)~nan, lsb, _mm512_set1_epi32(0x7FFF));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_add_epi32(w, bias), 16));
}

/* amx_finish with 16-lane vectors: the same operations in the same order, so the same bits. */
AMX_VEC_TARGET static void amx_finish512(const axon_gemm_amx_t *op, const float *acc, int64_t i0, int64_t j0,
                                         int64_t mr, int64_t nc) {
    const __m512 alpha = _mm512_set1_ps(op->alpha), beta = _mm512_set1_ps(op->beta);
    const int has_beta = op->beta != 0;
    __mmask16 mask[2];
    __m512 bias[2];
    for (int h = 0; h < 2; h++) {
        int64_t left = nc - 16 * h;
        mask[h] = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
        bias[h] = op->bias ? _mm512_maskz_loadu_ps(mask[h], op->bias + j0 + 16 * h) : _mm512_setzero_ps();
    }
    for (int64_t r = 0; r < mr; r++) {
        uint16_t *c = op->c + (i0 + r) * op->ldc + j0;
        for (int h = 0; h < 2; h++) {
            if (!mask[h]) continue;
            __m512 v = _mm512_mul_ps(alpha, _mm512_load_ps(acc + r * 32 + 16 * h));
            if (has_beta) {
                __m512i old = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask[h], c + 16 * h));
                v = _mm512_add_ps(v, _mm512_mul_ps(beta, _mm512_castsi512_ps(_mm512_slli_epi32(old, 16))));
            }
            if (op->bias) v = _mm512_add_ps(v, bias[h]);
            _mm256_mask_storeu_epi16(c + 16 * h, mask[h], amx_to_bf16(v));
        }
    }
}

/* One chunk of a panel from row-major B (column stride 1): each pair of rows interleaved by two permutes. */
AMX_VEC_TARGET static void amx_pack_b_rows512(uint16_t *chunk, const uint16_t *b, int64_t rs, int64_t ni,
                                              int64_t nj) {
    static const uint16_t lo[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i idx0 = _mm512_loadu_si512(lo), idx1 = _mm512_add_epi16(idx0, _mm512_set1_epi16(16));
    const __mmask32 m = nj >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << nj) - 1);
    for (int64_t r = 0; r < 16; r++) {
        const int64_t d = 2 * r;
        __m512i x = d < ni ? _mm512_maskz_loadu_epi16(m, b + d * rs) : _mm512_setzero_si512();
        __m512i y = d + 1 < ni ? _mm512_maskz_loadu_epi16(m, b + (d + 1) * rs) : _mm512_setzero_si512();
        _mm512_storeu_si512(chunk + r * 32, _mm512_permutex2var_epi16(x, idx0, y));
        _mm512_storeu_si512(chunk + 512 + r * 32, _mm512_permutex2var_epi16(x, idx1, y));
    }
}

/* One chunk of a panel from B whose rows are contiguous along the depth (column stride cs, row stride 1: a Linear's
 * weight): the 32 depth values of a column are 16 pairs, i.e. 16 dwords, and a tile row holds one pair per column,
 * so each 16-column tile is a 16 x 16 dword transpose (unpack 32, unpack 64, two lane shuffles). */
AMX_VEC_TARGET static void amx_dword_transpose16(__m512i r[16], uint16_t *tile);

AMX_VEC_TARGET static void amx_pack_b_cols512(uint16_t *chunk, const uint16_t *b, int64_t cs, int64_t ni,
                                              int64_t nj) {
    const __mmask32 m = ni >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << ni) - 1);
    for (int t = 0; t < 2; t++) {
        __m512i r[16];
        for (int q = 0; q < 16; q++)
            r[q] = 16 * t + q < nj ? _mm512_maskz_loadu_epi16(m, b + (16 * t + q) * cs) : _mm512_setzero_si512();
        amx_dword_transpose16(r, chunk + t * 512);
    }
}

/* One 32 x 32 chunk of A from A stored transposed (element (i, d) at a[i + d * cs]: a Linear's weight gradient
 * dY^T X), nr rows and nd depth values: A^T packed as a B chunk (pairs of depth values per row), then each tile's
 * 16 x 16 dwords transposed, so that tile row i holds row i's pairs. */
AMX_VEC_TARGET static void amx_pack_a_t512(uint16_t *chunk, const uint16_t *a, int64_t cs, int64_t nr, int64_t nd) {
    uint16_t pairs[1024] __attribute__((aligned(64)));
    amx_pack_b_rows512(pairs, a, cs, nd, nr);
    for (int t = 0; t < 2; t++) {
        __m512i r[16];
        for (int p = 0; p < 16; p++) r[p] = _mm512_load_si512(pairs + t * 512 + p * 32);
        amx_dword_transpose16(r, chunk + t * 512);
    }
}

/* tile (16 rows of 64 bytes) row p, dword q = r[q] dword p: a 16 x 16 dword transpose (unpack 32, unpack 64, two
 * lane shuffles). r is clobbered. */
AMX_VEC_TARGET static void amx_dword_transpose16(__m512i r[16], uint16_t *tile) {
    {
        __m512i u[16];
        for (int i = 0; i < 8; i++) {
            u[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            u[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        for (int i = 0; i < 4; i++) {
            r[4 * i] = _mm512_unpacklo_epi64(u[4 * i], u[4 * i + 2]);
            r[4 * i + 1] = _mm512_unpackhi_epi64(u[4 * i], u[4 * i + 2]);
            r[4 * i + 2] = _mm512_unpacklo_epi64(u[4 * i + 1], u[4 * i + 3]);
            r[4 * i + 3] = _mm512_unpackhi_epi64(u[4 * i + 1], u[4 * i + 3]);
        }
        /* r[4i + c], 128-bit lane L: column 4L + c of rows 4i .. 4i + 3 */
        for (int c = 0; c < 4; c++) {
            __m512i v1 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x88), v2 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xDD);
            __m512i w1 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x88);
            __m512i w2 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xDD);
            _mm512_storeu_si512(tile + (0 + c) * 32, _mm512_shuffle_i32x4(v1, w1, 0x88));
            _mm512_storeu_si512(tile + (4 + c) * 32, _mm512_shuffle_i32x4(v2, w2, 0x88));
            _mm512_storeu_si512(tile + (8 + c) * 32, _mm512_shuffle_i32x4(v1, w1, 0xDD));
            _mm512_storeu_si512(tile + (12 + c) * 32, _mm512_shuffle_i32x4(v2, w2, 0xDD));
        }
    }
}

#else
#define AMX_X86 0
#endif

int64_t axon_gemm_amx_chunks(int64_t k) { return (k + 31) / 32; }

size_t axon_gemm_amx_b_bytes(int64_t k, int64_t n) {
    return (size_t)((n + 31) / 32) * (size_t)axon_gemm_amx_chunks(k) * AMX_CHUNK * sizeof(uint16_t);
}

size_t axon_gemm_amx_a_bytes(int64_t mc, int64_t k) {
    return (size_t)((mc + 31) / 32) * (size_t)axon_gemm_amx_chunks(k) * AMX_CHUNK * sizeof(uint16_t);
}

size_t axon_gemm_amx_few_x_bytes(int64_t m, int64_t k) { return (size_t)(k / 32) * (size_t)((m + 15) / 16) * 1024; }

size_t axon_gemm_amx_work_bytes(int64_t mc, int64_t k, int64_t kc, int64_t nb) {
    size_t bytes = axon_gemm_amx_a_bytes(mc, k);
    if (kc < k) bytes += (size_t)((mc + 31) / 32) * (size_t)nb * 32 * 32 * sizeof(float);
    return bytes;
}

/* One 32-deep chunk of panel p of B into the packed copy. */
static void amx_pack_b_chunk(uint16_t *bp, const uint16_t *b, int64_t rs, int64_t cs, int64_t k, int64_t n, int64_t p,
                             int64_t c) {
    const int64_t nch = axon_gemm_amx_chunks(k);
    uint16_t *chunk = bp + (p * nch + c) * AMX_CHUNK;
    const int64_t j0 = p * 32, nj = n - j0 < 32 ? n - j0 : 32;
    const int64_t i0 = c * 32, ni = k - i0 < 32 ? k - i0 : 32;
#if AMX_X86
    if (cs == 1) {
        amx_pack_b_rows512(chunk, b + i0 * rs + j0, rs, ni, nj);
        return;
    }
    if (rs == 1) {
        amx_pack_b_cols512(chunk, b + i0 + j0 * cs, cs, ni, nj);
        return;
    }
#endif
    if (ni < 32 || nj < 32) memset(chunk, 0, AMX_CHUNK * sizeof *chunk);
    /* element (i0 + d, j0 + q) goes to tile q / 16, row d / 2, column q % 16, pair slot d % 2 */
    if (cs == 1) {
        for (int64_t d = 0; d < ni; d++) {
            const uint16_t *src = b + (i0 + d) * rs + j0;
            uint16_t *dst = chunk + (d >> 1) * 32 + (d & 1);
            for (int64_t q = 0; q < nj; q++) dst[(q >> 4) * 512 + (q & 15) * 2] = src[q];
        }
    } else {
        for (int64_t q = 0; q < nj; q++) {
            const uint16_t *src = b + i0 * rs + (j0 + q) * cs;
            uint16_t *dst = chunk + (q >> 4) * 512 + (q & 15) * 2;
            for (int64_t d = 0; d < ni; d++) dst[(d >> 1) * 32 + (d & 1)] = src[d * rs];
        }
    }
}

/* Panels [p0, p1) of B (k x n, element (i, j) at b[i * rs + j * cs]) into bp. The loops follow B's unit stride: for
 * row-major B, 32 rows at a time across the panels (one panel at a time down the depth would read 64 bytes per row
 * at a row stride of pages, which the hardware prefetchers do not follow), else panel by panel down the depth. */
void axon_gemm_amx_pack_b(uint16_t *bp, const uint16_t *b, int64_t rs, int64_t cs, int64_t k, int64_t n, int64_t p0,
                          int64_t p1) {
    const int64_t nch = axon_gemm_amx_chunks(k);
    if (cs == 1) {
        for (int64_t c = 0; c < nch; c++)
            for (int64_t p = p0; p < p1; p++) amx_pack_b_chunk(bp, b, rs, cs, k, n, p, c);
    } else {
        for (int64_t p = p0; p < p1; p++)
            for (int64_t c = 0; c < nch; c++) amx_pack_b_chunk(bp, b, rs, cs, k, n, p, c);
    }
}

/* Offset, in chunks, of chunk c of 32-row unit u in a block of `units` units packed in depth slices of kcc chunks:
 * slice by slice, and within a slice unit by unit, so the units a slice multiplies are contiguous. */
static int64_t amx_a_chunk(int64_t units, int64_t nch, int64_t kcc, int64_t u, int64_t c) {
    const int64_t c0 = c / kcc * kcc, ncc = nch - c0 < kcc ? nch - c0 : kcc;
    return units * c0 + u * ncc + (c - c0);
}

/* Rows [r0, r0 + mr) of A (element (i, d) at a[i * rs + d * cs]) into 32-row units of 16 x 32 tiles, in depth slices
 * of kcc chunks (amx_a_chunk). */
static void amx_pack_a(uint16_t *ap, const uint16_t *a, int64_t rs, int64_t cs, int64_t k, int64_t kcc, int64_t r0,
                       int64_t mr) {
    const int64_t nch = axon_gemm_amx_chunks(k), units = (mr + 31) / 32;
    for (int64_t u = 0; u < units; u++) {
        for (int64_t c = 0; c < nch; c++) {
            uint16_t *chunk = ap + amx_a_chunk(units, nch, kcc, u, c) * AMX_CHUNK;
            const int64_t d0 = c * 32, nd = k - d0 < 32 ? k - d0 : 32, nr = mr - u * 32 < 32 ? mr - u * 32 : 32;
#if AMX_X86
            if (rs == 1 && cs != 1) { /* stored transposed: 16-bit transposes on vectors, not a strided gather */
                amx_pack_a_t512(chunk, a + r0 + u * 32 + d0 * cs, cs, nr, nd);
                continue;
            }
#endif
            if (nd < 32 || nr < 32) memset(chunk, 0, AMX_CHUNK * sizeof *chunk);
            for (int64_t r = 0; r < nr; r++) { /* tile r / 16, row r % 16: the two tiles are consecutive */
                const uint16_t *src = a + (r0 + u * 32 + r) * rs + d0 * cs;
                uint16_t *dst = chunk + r * 32;
                if (cs == 1 && nd == 32) memcpy(dst, src, 32 * sizeof *dst); /* inlined: a 64-byte copy */
                else if (cs == 1) memcpy(dst, src, (size_t)nd * sizeof *dst);
                else for (int64_t d = 0; d < nd; d++) dst[d] = src[d * cs];
            }
        }
    }
}

#if AMX_X86
#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16")))
/* Palette 1: every tile 16 rows of 64 bytes. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config_t;

static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static int amx_ok;

static void amx_init(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16") ||
        !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl"))
        return;
    const long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    amx_ok = syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
}

int axon_gemm_amx_available(void) {
    pthread_once(&amx_once, amx_init);
    return amx_ok;
}

/* The four accumulator tiles of a 32 x 32 float32 block (tiles 0-3: rows 0-15 and 16-31 by columns 0-15 and 16-31),
 * loaded from in (row stride ld floats; NULL: zeroed) and stored to out. */
AMX_TARGET static inline void amx_acc_load(const float *in, int64_t ld) {
    if (in) {
        _tile_loadd(0, in, ld * 4);
        _tile_loadd(1, in + 16, ld * 4);
        _tile_loadd(2, in + 16 * ld, ld * 4);
        _tile_loadd(3, in + 16 * ld + 16, ld * 4);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
}

AMX_TARGET static inline void amx_acc_store(float *out, int64_t ld) {
    _tile_stored(0, out, ld * 4);
    _tile_stored(1, out + 16, ld * 4);
    _tile_stored(2, out + 16 * ld, ld * 4);
    _tile_stored(3, out + 16 * ld + 16, ld * 4);
}

/* out (32 x 32 float32, row stride 32) = in (NULL: zeros) + the 32 packed rows at ap times the packed panel at bp,
 * over nch chunks. Partial sums stored and reloaded as float32 are exact, so a depth split in slices adds the same
 * terms in the same order as one pass over the whole depth. */
AMX_TARGET static void amx_tile_product(const uint16_t *ap, const uint16_t *bp, int64_t nch, const float *in,
                                        float *out, const char *pf, int64_t pf_per_chunk) {
    amx_acc_load(in, 32);
    for (int64_t c = 0; c < nch; c++) {
        const uint16_t *a = ap + c * AMX_CHUNK, *b = bp + c * AMX_CHUNK;
        for (int64_t l = 0; l < pf_per_chunk; l++) _mm_prefetch(pf + (c * pf_per_chunk + l) * 64, _MM_HINT_T1);
        _tile_stream_loadd(4, a, 64);
        _tile_loadd(6, b, 64);
        _tile_stream_loadd(5, a + 512, 64);
        _tile_loadd(7, b + 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    amx_acc_store(out, 32);
}

/* Few rows (axon_gemm_amx_few below): out^T = W X^T, W a Linear's weight (n x k, rows along the depth) loaded straight
 * into A-side tiles of 16 of its rows, X packed as B-side tiles (xs uint16 per 32-deep chunk). acc gets 16 x 16
 * float32 blocks, one per (W tile, X tile) pair, W tile major. With one X tile four W tiles share it (xt 1); with two,
 * two W tiles each meet both (xt 2). */
AMX_TARGET static void amx_few_product4(const uint16_t *w, int64_t ldw, const uint16_t *xp, int64_t xs, int64_t nch,
                                        int xt, float *acc) {
    const int64_t wstride = ldw * 2, w16 = 16 * ldw;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    if (xt == 1) {
        for (int64_t c = 0; c < nch; c++) {
            const uint16_t *wc = w + c * 32;
            _tile_loadd(4, xp + c * xs, 64);
            _tile_loadd(5, wc, wstride);
            _tile_loadd(6, wc + w16, wstride);
            _tile_loadd(7, wc + 2 * w16, wstride);
            _tile_dpbf16ps(0, 5, 4);
            _tile_dpbf16ps(1, 6, 4);
            _tile_dpbf16ps(2, 7, 4);
            _tile_loadd(5, wc + 3 * w16, wstride);
            _tile_dpbf16ps(3, 5, 4);
        }
    } else {
        for (int64_t c = 0; c < nch; c++) {
            const uint16_t *wc = w + c * 32;
            _tile_loadd(4, xp + c * xs, 64);
            _tile_loadd(7, xp + c * xs + 512, 64);
            _tile_loadd(5, wc, wstride);
            _tile_loadd(6, wc + w16, wstride);
            _tile_dpbf16ps(0, 5, 4);
            _tile_dpbf16ps(1, 5, 7);
            _tile_dpbf16ps(2, 6, 4);
            _tile_dpbf16ps(3, 6, 7);
        }
    }
    _tile_stored(0, acc, 64);
    _tile_stored(1, acc + 256, 64);
    _tile_stored(2, acc + 512, 64);
    _tile_stored(3, acc + 768, 64);
}

/* One W tile against xt X tiles: the tails. */
AMX_TARGET static void amx_few_product1(const uint16_t *w, int64_t ldw, const uint16_t *xp, int64_t xs, int64_t nch,
                                        int xt, float *acc) {
    _tile_zero(0);
    _tile_zero(1);
    for (int64_t c = 0; c < nch; c++) {
        _tile_loadd(5, w + c * 32, ldw * 2);
        _tile_loadd(4, xp + c * xs, 64);
        _tile_dpbf16ps(0, 5, 4);
        if (xt == 2) {
            _tile_loadd(7, xp + c * xs + 512, 64);
            _tile_dpbf16ps(1, 5, 7);
        }
    }
    _tile_stored(0, acc, 64);
    if (xt == 2) _tile_stored(1, acc + 256, 64);
}

AMX_TARGET static void amx_config(void) {
    amx_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    /* Not _tile_loadconfig: GCC 12's names only 8 bytes of cfg as read, so the other stores may be dropped. */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

AMX_TARGET static void amx_release(void) { _tile_release(); }

void axon_gemm_amx_begin(void) { amx_config(); }

void axon_gemm_amx_end(void) { amx_release(); }

AMX_TARGET void axon_gemm_amx_tile32(const uint16_t *a, int64_t lda, const uint16_t *bp, int64_t nch, const float *in,
                                     int64_t ldi, float *out, int64_t ldo) {
    amx_acc_load(in, ldi);
    for (int64_t c = 0; c < nch; c++) {
        const uint16_t *b = bp + c * AMX_CHUNK;
        _tile_loadd(4, a + c * 32, lda * 2);
        _tile_loadd(6, b, 64);
        _tile_loadd(5, a + 16 * lda + c * 32, lda * 2);
        _tile_loadd(7, b + 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    amx_acc_store(out, ldo);
}

/* The slice of packed B that follows panel p's slice at depth chunk c0 (ncc chunks) in axon_gemm_amx_block: the
 * next panel of the group [q0, q1) at the same depth, else the group's first panel one slice deeper; NULL after the
 * last. *lines: its 64-byte lines, which the units' products bring into L2 a share each. */
static const char *amx_next_slice(const axon_gemm_amx_t *op, int64_t p, int64_t q0, int64_t q1, int64_t c0,
                                  int64_t ncc, int64_t *lines) {
    const int64_t nch = axon_gemm_amx_chunks(op->k), kcc = op->kc / 32;
    const int64_t pn = p + 1 < q1 ? p + 1 : q0, cn = p + 1 < q1 ? c0 : c0 + ncc;
    if (cn >= nch) {
        *lines = 0;
        return NULL;
    }
    *lines = (nch - cn < kcc ? nch - cn : kcc) * AMX_CHUNK * (int64_t)sizeof(uint16_t) / 64;
    return (const char *)(op->bp + (pn * nch + cn) * AMX_CHUNK);
}

void axon_gemm_amx_block(const axon_gemm_amx_t *op, int64_t r0, int64_t r1, int64_t p0, int64_t p1, void *work) {
    const int64_t nch = axon_gemm_amx_chunks(op->k), kcc = op->kc / 32, nb = op->nb;
    uint16_t *ap = work;
    /* partial sums between depth slices, unit by unit, each 32 x 32 block contiguous; none with one slice */
    float *part = kcc < nch ? (float *)((char *)work + axon_gemm_amx_a_bytes(op->mc, op->k)) : NULL;
    float acc[32 * 32] __attribute__((aligned(64)));
    amx_config();
    for (int64_t i0 = r0; i0 < r1; i0 += op->mc) {
        const int64_t mr = r1 - i0 < op->mc ? r1 - i0 : op->mc;
        const int64_t units = (mr + 31) / 32;
        amx_pack_a(ap, op->a, op->a_rs, op->a_cs, op->k, kcc, i0, mr);
        for (int64_t q0 = p0; q0 < p1; q0 += nb) {
            const int64_t q1 = p1 - q0 < nb ? p1 : q0 + nb;
            for (int64_t c0 = 0; c0 < nch; c0 += kcc) {
                const int64_t ncc = nch - c0 < kcc ? nch - c0 : kcc;
                const int first = c0 == 0, last = c0 + ncc == nch;
                for (int64_t p = q0; p < q1; p++) {
                    const int64_t j0 = p * 32, nc = op->n - j0 < 32 ? op->n - j0 : 32;
                    const uint16_t *bslice = op->bp + (p * nch + c0) * AMX_CHUNK;
                    int64_t lines;
                    const char *next = amx_next_slice(op, p, q0, q1, c0, ncc, &lines);
                    const int64_t per = (lines + units * ncc - 1) / (units * ncc);
                    for (int64_t u = 0; u < units; u++) {
                        float *blk = part ? part + (u * nb + (p - q0)) * 1024 : NULL;
                        const int64_t l0 = u * ncc * per < lines ? u * ncc * per : lines;
                        const int64_t pu = (lines - l0) / ncc < per ? (lines - l0) / ncc : per;
                        amx_tile_product(ap + amx_a_chunk(units, nch, kcc, u, c0) * AMX_CHUNK, bslice, ncc,
                                         first ? NULL : blk, last ? acc : blk, next ? next + l0 * 64 : NULL, pu);
                        if (last) amx_finish512(op, acc, i0 + u * 32, j0, mr - u * 32 < 32 ? mr - u * 32 : 32, nc);
                    }
                }
            }
        }
    }
    amx_release();
}

/* Rows of out from a 16 x 16 block of out^T (acc, row stride 16: acc[q * 16 + i] is out[i][j0 + q]), rows [i0, i1)
 * of out: the same operations in the same order as amx_finish512, so the same rounding. */
AMX_VEC_TARGET static void amx_few_finish(const axon_gemm_amx_few_t *op, const float *acc, int64_t i0, int64_t i1,
                                          int64_t j0) {
    const __m512 alpha = _mm512_set1_ps(op->alpha), beta = _mm512_set1_ps(op->beta);
    const __m512i col = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(16));
    const __m512 bias = op->bias ? _mm512_loadu_ps(op->bias + j0) : _mm512_setzero_ps();
    for (int64_t i = i0; i < i1; i++) {
        uint16_t *c = op->c + i * op->ldc + j0;
        __m512 v = _mm512_mul_ps(alpha, _mm512_i32gather_ps(col, acc + (i - i0), 4));
        if (op->beta != 0) {
            __m512i old = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)c));
            v = _mm512_add_ps(v, _mm512_mul_ps(beta, _mm512_castsi512_ps(_mm512_slli_epi32(old, 16))));
        }
        if (op->bias) v = _mm512_add_ps(v, bias);
        _mm256_storeu_si256((__m256i *)c, amx_to_bf16(v));
    }
}

void axon_gemm_amx_few_pack_x(uint16_t *xp, const uint16_t *x, int64_t rs, int64_t cs, int64_t m, int64_t k) {
    const int64_t nch = k / 32, xt = (m + 15) / 16;
    memset(xp, 0, axon_gemm_amx_few_x_bytes(m, k));
    /* row i of X, depth 32c + 2r + s, goes to chunk c, tile i / 16, row r, column i % 16, pair slot s */
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < nch; c++) {
            uint16_t *dst = xp + (c * xt + i / 16) * 512 + (i % 16) * 2;
            const uint16_t *src = x + i * rs + c * 32 * cs;
            for (int64_t d = 0; d < 32; d++) dst[(d >> 1) * 32 + (d & 1)] = src[d * cs];
        }
}

/* Columns [j0, j1) in groups of four W tiles (X of up to 16 rows) or two (more rows: the group's W, 32 rows of the
 * weight, stays in L2 while slabs of 32 rows of X pass over it). */
void axon_gemm_amx_few(const axon_gemm_amx_few_t *op, int64_t j0, int64_t j1) {
    const int64_t nch = op->k / 32, xtiles = (op->m + 15) / 16, xs = xtiles * 512;
    const int per = xtiles == 1 ? 4 : 2; /* W tiles per group */
    float acc[4 * 256] __attribute__((aligned(64)));
    amx_config();
    for (int64_t j = j0; j < j1;) {
        const int64_t wt = (j1 - j) / 16 < per ? (j1 - j) / 16 : per;
        for (int64_t i0 = 0; i0 < op->m; i0 += 32) {
            const int xt = op->m - i0 > 16 ? 2 : 1;
            const uint16_t *xp = op->xp + (i0 / 16) * 512;
            if (wt == per && (per == 4 || xt == 2)) {
                amx_few_product4(op->w + j * op->ldw, op->ldw, xp, xs, nch, xt, acc);
            } else {
                for (int64_t t = 0; t < wt; t++)
                    amx_few_product1(op->w + (j + 16 * t) * op->ldw, op->ldw, xp, xs, nch, xt, acc + t * xt * 256);
            }
            for (int64_t t = 0; t < wt; t++)
                for (int h = 0; h < xt; h++) {
                    const int64_t r0 = i0 + 16 * h, r1 = op->m < r0 + 16 ? op->m : r0 + 16;
                    amx_few_finish(op, acc + (t * xt + h) * 256, r0, r1, j + 16 * t);
                }
        }
        j += 16 * wt;
    }
    amx_release();
}

#else

int axon_gemm_amx_available(void) { return 0; }

void axon_gemm_amx_begin(void) {}

void axon_gemm_amx_end(void) {}

void axon_gemm_amx_tile32(const uint16_t *a, int64_t lda, const uint16_t *bp, int64_t nch, const float *in,
                          int64_t ldi, float *out, int64_t ldo) {
    (void)a, (void)lda, (void)bp, (void)nch, (void)in, (void)ldi, (void)out, (void)ldo;
}

void axon_gemm_amx_block(const axon_gemm_amx_t *op, int64_t r0, int64_t r1, int64_t p0, int64_t p1, void *work) {
    (void)op, (void)r0, (void)r1, (void)p0, (void)p1, (void)work;
}

void axon_gemm_amx_few_pack_x(uint16_t *xp, const uint16_t *x, int64_t rs, int64_t cs, int64_t m, int64_t k) {
    (void)xp, (void)x, (void)rs, (void)cs, (void)m, (void)k;
}

void axon_gemm_amx_few(const axon_gemm_amx_few_t *op, int64_t j0, int64_t j1) {
    (void)op, (void)j0, (void)j1;
    (void)amx_pack_a;
}

#endif
