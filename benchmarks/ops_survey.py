"""Other eager ops on axon against PyTorch CPU, in one run: reductions, arg reductions, scans, comparisons and
selection, casts and copies, indexing, sorting, pooling and upsampling, normalization, losses, random numbers, a
multi-tensor op, complex arithmetic and special functions, on inputs of about 1M elements ([1024, 1024] matrices, [8, 32, 64, 64] images).

    python benchmarks/ops_survey.py [--threads N] [--reps N] [case ...]

Each figure is the best of 5 timings of `reps` back-to-back calls (axon: synchronized after them); ratio = axon /
CPU, flagged with << above 1.5. benchmarks/ops.py keeps the issue's fixed table; this one is for finding the ops that
fell behind."""

from __future__ import annotations

import argparse
import os

import torch
import torch.nn.functional as F

from timing import best_us


def T(*ts):
    return lambda d: [t.to(d) for t in ts]


_gen = torch.Generator().manual_seed(0)
A = torch.randn(1024, 1024, generator=_gen)
B = torch.randn(1024, 1024, generator=_gen)
IDX = torch.randint(0, 1024, (1024, 1024), generator=_gen)
MASK = torch.rand(1024, 1024, generator=_gen) > 0.5
IMG = torch.randn(8, 32, 64, 64, generator=_gen)
Z = torch.complex(A[:512], B[:512])  # complex64 [512, 1024]: 1M complex64 elements over 8 MB
W3 = torch.randn(32, 32, 3, 3, generator=_gen)
W32 = torch.randn(32, generator=_gen)  # a per-channel weight for IMG
_, GN_MEAN, GN_RSTD = torch.ops.aten.native_group_norm(IMG, None, None, 8, 32, 4096, 8, 1e-5)
WDW3 = torch.randn(32, 1, 3, 3, generator=_gen)  # depthwise 3x3 over IMG's 32 channels
WDW7 = torch.randn(32, 1, 7, 7, generator=_gen)
aten = torch.ops.aten
IMG_512 = torch.rand(1, 3, 512, 512, generator=_gen)           # an image for antialiased resizing
FMP_SAMPLES = torch.rand(8, 32, 2, generator=_gen)             # fractional max pooling's samples for IMG
LS_A = torch.randn(64, 100, 20, generator=_gen)                # a batch of least-squares problems
LS_B = torch.randn(64, 100, 5, generator=_gen)
# linear algebra: well-conditioned matrices, one large and batches of small ones
SQ = torch.randn(512, 512, generator=_gen) + 512 ** 0.5 * torch.eye(512)
SPD = SQ @ SQ.mT
RHS = torch.randn(512, 64, generator=_gen)
SMALL = torch.randn(256, 16, 16, generator=_gen) + 4 * torch.eye(16)
V3 = torch.randn(1024, 3, 341, generator=_gen)
# grid sampling: IMG resampled at a rotated and scaled grid of the same size, and a 3-d volume
GRID = F.affine_grid(torch.tensor([[[0.9, -0.3, 0.1], [0.3, 0.9, -0.05]]]).repeat(8, 1, 1), [8, 32, 64, 64],
                     align_corners=False)
VOL = torch.randn(2, 16, 16, 32, 32, generator=_gen)
GRID3 = torch.rand(2, 16, 32, 32, 3, generator=_gen) * 2.2 - 1.1
GS_GRAD = torch.randn(8, 32, 64, 64, generator=_gen)
# A grid mostly outside its volume (op_db's grid_sampler_3d sample: coordinates in [-4, 4]).
VOL_FAR = torch.randn(20, 21, 22, 23, 24, generator=_gen)
GRID_FAR = torch.rand(20, 12, 11, 10, 3, generator=_gen) * 8 - 4
_m = torch.randn(5, 5, generator=_gen)
SPD5 = _m @ _m.T + 5 * torch.eye(5)
COL = torch.randn(16384, 1, generator=_gen)
A_NAN = A.masked_fill(A > 2, float("nan"))
# embedding bags: a 100k x 64 table, 2048 bags of 20 indices (a recommender model's lookup)
EB_W = torch.randn(100_000, 64, generator=_gen)
EB_IDX = torch.randint(0, 100_000, (2048 * 20,), generator=_gen)
EB_OFF = torch.arange(0, 2048 * 20, 20)
EB_GRAD = torch.randn(2048, 64, generator=_gen)

# name: (inputs on a device, the op on them)
CASES = {
    "sum dim0": (T(A), lambda a: a.sum(0)),
    "sum dim1": (T(A), lambda a: a.sum(1)),
    "mean dim1": (T(A), lambda a: a.mean(1)),
    "prod dim1": (T(A), lambda a: a.prod(1)),
    "amax dim0": (T(A), lambda a: a.amax(0)),
    "max dim1": (T(A), lambda a: a.max(1)),
    "argmax dim0": (T(A), lambda a: a.argmax(0)),
    "var dim1": (T(A), lambda a: a.var(1)),
    "std dim0": (T(A), lambda a: a.std(0)),
    "norm dim1": (T(A), lambda a: a.norm(dim=1)),
    "logsumexp dim1": (T(A), lambda a: a.logsumexp(1)),
    "cumsum dim1": (T(A), lambda a: a.cumsum(1)),
    "cumsum dim0": (T(A), lambda a: a.cumsum(0)),
    "cumprod dim1": (T(A), lambda a: a.cumprod(1)),
    "any dim1": (T(MASK), lambda m: m.any(1)),
    "all dim0": (T(MASK), lambda m: m.all(0)),
    "eq": (T(A, B), lambda a, b: a == b),
    "where": (T(MASK, A, B), lambda m, a, b: torch.where(m, a, b)),
    "clamp": (T(A), lambda a: a.clamp(-0.5, 0.5)),
    "lerp": (T(A, B), lambda a, b: torch.lerp(a, b, 0.3)),
    "addcmul": (T(A, B), lambda a, b: torch.addcmul(a, a, b, value=0.5)),
    "addcdiv": (T(A, B), lambda a, b: torch.addcdiv(a, a, b.abs() + 1)),
    "cast f32->f16": (T(A), lambda a: a.half()),
    "cast f32->i32": (T(A), lambda a: a.int()),
    "cast i64->f32": (T(IDX), lambda i: i.float()),
    "transpose copy": (T(A), lambda a: a.t().contiguous()),
    "cat dim1": (T(A, B), lambda a, b: torch.cat([a, b], 1)),
    "stack": (T(A, B), lambda a, b: torch.stack([a, b])),
    "pad": (T(IMG), lambda x: F.pad(x, (1, 1, 1, 1))),
    "gather dim1": (T(A, IDX), lambda a, i: a.gather(1, i)),
    "scatter_add dim1": (T(A, IDX, B), lambda a, i, b: a.scatter_add(1, i, b)),
    "index_add": (T(A, IDX, B), lambda a, i, b: a.index_add(0, i[0], b)),
    "index_put accumulate": (T(A, IDX, B), lambda a, i, b: a.index_put((i[0],), b, accumulate=True)),
    "masked_fill": (T(A, MASK), lambda a, m: a.masked_fill(m, 0.0)),
    "masked_select": (T(A, MASK), lambda a, m: a.masked_select(m)),
    "nonzero": (T(MASK), lambda m: m.nonzero()),
    "sort dim1": (T(A), lambda a: a.sort(1)),
    "topk 8 dim1": (T(A), lambda a: a.topk(8, 1)),
    "argsort dim0": (T(A), lambda a: a.argsort(0)),
    "unique": (T(IDX), lambda i: torch.unique(i, return_counts=True)),
    "conv2d 3x3": (T(IMG, W3), lambda x, w: F.conv2d(x, w, padding=1)),
    "depthwise conv2d 3x3": (T(IMG, WDW3), lambda x, w: F.conv2d(x, w, padding=1, groups=32)),
    "depthwise conv2d 3x3 stride 2": (T(IMG, WDW3), lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=32)),
    "depthwise conv2d 7x7": (T(IMG, WDW7), lambda x, w: F.conv2d(x, w, padding=3, groups=32)),
    "depthwise conv2d 3x3 backward": (T(IMG, IMG, WDW3), lambda g, x, w: aten.convolution_backward(
        g, x, w, [32], [1, 1], [1, 1], [1, 1], False, [0, 0], 32, [True, True, True])),
    "max_pool2d 2": (T(IMG), lambda x: F.max_pool2d(x, 2)),
    "avg_pool2d 2": (T(IMG), lambda x: F.avg_pool2d(x, 2)),
    "adaptive_avg_pool2d 7": (T(IMG), lambda x: F.adaptive_avg_pool2d(x, 7)),
    "adaptive_avg_pool2d 1": (T(IMG), lambda x: F.adaptive_avg_pool2d(x, 1)),
    "adaptive_avg_pool2d 1 backward": (T(IMG[:, :, :1, :1].contiguous(), IMG),
                                       lambda g, x: aten._adaptive_avg_pool2d_backward(g, x)),
    "avg_pool2d 2 backward": (T(IMG[:, :, ::2, ::2].contiguous(), IMG), lambda g, x: aten.avg_pool2d_backward(
        g, x, [2, 2], [2, 2], [0, 0], False, True, None)),
    "upsample nearest x2": (T(IMG), lambda x: F.interpolate(x, scale_factor=2)),
    "upsample bilinear x2": (T(IMG), lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")),
    "group_norm 8": (T(IMG), lambda x: F.group_norm(x, 8)),
    "group_norm 8 backward": (T(IMG, IMG, GN_MEAN, GN_RSTD, W32), lambda g, x, m, r, w: aten.native_group_norm_backward(
        g, x, m, r, w, 8, 32, 4096, 8, [True, True, True])),
    "batch_norm train": (T(IMG), lambda x: F.batch_norm(x, None, None, training=True)),
    "layer_norm backward": (T(A), lambda a: aten.native_layer_norm_backward(
        a, a, [1024], a.mean(1, keepdim=True), a.std(1, keepdim=True), None, None, [True, False, False])),
    "softmax backward": (T(A, B), lambda a, b: aten._softmax_backward_data(a, b.softmax(1), 1, torch.float32)),
    "cross_entropy": (T(A, IDX[:, 0]), lambda a, t: F.cross_entropy(a, t)),
    "mse_loss": (T(A, B), lambda a, b: F.mse_loss(a, b)),
    "bce_with_logits": (T(A, MASK), lambda a, m: F.binary_cross_entropy_with_logits(a, m.float())),
    "uniform_": (T(A), lambda a: a.uniform_()),
    "normal_": (T(A), lambda a: a.normal_()),
    "bernoulli": (T(A), lambda a: torch.bernoulli(a.sigmoid())),
    "randperm 2^20": (lambda d: [d], lambda d: torch.randperm(1 << 20, device=d)),
    "multinomial 4": (T(A.abs()), lambda a: torch.multinomial(a, 4)),
    "dropout": (T(A), lambda a: F.dropout(a, 0.3)),
    "embedding 64x1024 rows": (T(A, IDX[:64]), lambda w, i: F.embedding(i, w)),
    "_foreach_add 64 tensors": (lambda d: [[t.to(d) for t in A.split(16)], [t.to(d) for t in B.split(16)]],
                                lambda xs, ys: torch._foreach_add(xs, ys)),
    "_fused_adamw_ 64 tensors": (lambda d: [[t.to(d) for t in A.split(16)], [t.to(d) for t in B.split(16)],
                                            [torch.zeros(16, 1024, device=d) for _ in range(64)],
                                            [torch.zeros(16, 1024, device=d) for _ in range(64)],
                                            [torch.ones((), device=d) for _ in range(64)]],
                                 lambda p, g, m, v, s: torch._fused_adamw_(p, g, m, v, [], s, lr=1e-3, beta1=0.9,
                                                                           beta2=0.999, weight_decay=0.01, eps=1e-8,
                                                                           amsgrad=False, maximize=False)),
    "_fused_adamw_ 64 one-element tensors": (lambda d: [[torch.randn(1, device=d) for _ in range(64)],
                                                        [torch.randn(1, device=d) for _ in range(64)],
                                                        [torch.zeros(1, device=d) for _ in range(64)],
                                                        [torch.zeros(1, device=d) for _ in range(64)],
                                                        [torch.ones((), device=d) for _ in range(64)]],
                                             lambda p, g, m, v, s: torch._fused_adamw_(
                                                 p, g, m, v, [], s, lr=1e-3, beta1=0.9, beta2=0.999,
                                                 weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False)),
    "_fused_sgd_ 64 tensors": (lambda d: [[t.to(d) for t in A.split(16)], [t.to(d) for t in B.split(16)],
                                          [torch.zeros(16, 1024, device=d) for _ in range(64)]],
                               lambda p, g, m: torch._fused_sgd_(p, g, m, weight_decay=0.0, momentum=0.9, lr=1e-3,
                                                                 dampening=0.0, nesterov=False, maximize=False,
                                                                 is_first_step=False)),
    "arange 1M": (lambda d: [d], lambda d: torch.arange(1 << 20, device=d)),
    "complex mul": (T(Z, Z.conj().resolve_conj()), lambda a, b: a * b),
    "complex add 1j": (T(Z), lambda a: a + 1j),
    "complex div": (T(Z, Z.flip(0)), lambda a, b: a / b),
    "complex abs": (T(Z), lambda a: a.abs()),
    "complex exp": (T(Z), lambda a: a.exp()),
    "complex sum dim1": (T(Z), lambda a: a.sum(1)),
    "lgamma": (T(A), lambda a: torch.lgamma(a)),
    "digamma": (T(A), lambda a: torch.digamma(a)),
    "polygamma 2": (T(A), lambda a: torch.polygamma(2, a)),
    "rfft dim1": (T(A), lambda a: torch.fft.rfft(a)),
    "fft dim0 complex": (T(Z), lambda a: torch.fft.fft(a, dim=0)),
    "irfft2": (T(Z), lambda a: torch.fft.irfft2(a)),
    "special.i0e": (T(A), lambda a: torch.special.i0e(a)),
    "special.bessel_j0": (T(A), lambda a: torch.special.bessel_j0(a)),
    "special.modified_bessel_k0": (T(A.abs()), lambda a: torch.special.modified_bessel_k0(a)),
    "special.erfcx": (T(A), lambda a: torch.special.erfcx(a)),
    "chebyshev_t n=5": (T(A), lambda a: torch.special.chebyshev_polynomial_t(a, 5)),
    "scatter_reduce mean": (T(A, IDX, B), lambda a, i, b: a.scatter_reduce(1, i, b, "mean", include_self=False)),
    "linalg.solve 512": (T(SQ, RHS), lambda a, b: torch.linalg.solve(a, b)),
    "linalg.inv 256x16x16": (T(SMALL), lambda a: torch.linalg.inv(a)),
    "linalg.det 256x16x16": (T(SMALL), lambda a: torch.linalg.det(a)),
    "linalg.cholesky 512": (T(SPD), lambda a: torch.linalg.cholesky(a)),
    "linalg.eigh 512": (T(SPD), lambda a: torch.linalg.eigh(a)),
    "linalg.svd 512x256": (T(SQ[:, :256]), lambda a: torch.linalg.svd(a, full_matrices=False)),
    "linalg.qr 512": (T(SQ), lambda a: torch.linalg.qr(a)),
    "linalg.eig 256": (T(SQ[:256, :256]), lambda a: torch.linalg.eig(a)),
    "linalg.ldl_factor 512": (T(SPD), lambda a: torch.linalg.ldl_factor(a)),
    "solve_triangular 512": (T(SQ, RHS), lambda a, b: torch.linalg.solve_triangular(a, b, upper=True)),
    "linalg.cross dim1": (T(V3, V3.flip(0)), lambda a, b: torch.linalg.cross(a, b, dim=1)),
    # op_db's last pointwise, scan, membership and random fallbacks
    "erfinv": (T(A.tanh()), lambda a: torch.erfinv(a)),
    "erfinv float64": (T(A.tanh().double()), lambda a: torch.erfinv(a)),
    "special.ndtri": (T(A.sigmoid()), lambda a: torch.special.ndtri(a)),
    "special.i1e": (T(A), lambda a: torch.special.i1e(a)),
    "floor": (T(A), lambda a: torch.floor(a)),
    "frac": (T(A), lambda a: torch.frac(a)),
    "fmod": (T(A, B.abs() + 0.5), lambda a, b: torch.fmod(a, b)),
    "remainder": (T(A, B.abs() + 0.5), lambda a, b: torch.remainder(a, b)),
    "floor_divide": (T(A, B.abs() + 0.5), lambda a, b: torch.floor_divide(a, b)),
    "fmod float64": (T(A.double(), B.double().abs() + 0.5), lambda a, b: torch.fmod(a, b)),
    "nextafter": (T(A, B), lambda a, b: torch.nextafter(a, b)),
    "frexp": (T(A), lambda a: torch.frexp(a)),
    "nan_to_num": (T(A.log()), lambda a: torch.nan_to_num(a)),
    "round decimals=2": (T(A), lambda a: torch.round(a, decimals=2)),
    "gcd int64": (T(IDX, IDX.flip(0)), lambda a, b: torch.gcd(a, b)),
    "cummax dim1": (T(A), lambda a: torch.cummax(a, 1)),
    "cummin dim0": (T(A), lambda a: torch.cummin(a, 0)),
    "logcumsumexp dim1": (T(A), lambda a: torch.logcumsumexp(a, 1)),
    "isin 1M in 1000": (T(IDX, IDX[0, :1000]), lambda a, b: torch.isin(a, b)),
    "repeat_interleave 1M": (T(IDX[0] % 2048), lambda r: torch.repeat_interleave(r)),
    "cauchy_": (T(A), lambda a: a.cauchy_()),
    "log_normal_": (T(A), lambda a: a.log_normal_()),
    "geometric_": (T(A), lambda a: a.geometric_(0.3)),
    "nanmedian dim1": (T(A), lambda a: torch.nanmedian(a, 1)),
    "max_unpool2d": (T(*F.max_pool2d(IMG, 2, return_indices=True)), lambda y, i: F.max_unpool2d(y, i, 2)),
    "unfold backward": (T(A, A.unfold(1, 8, 4)), lambda a, g: torch.ops.aten.unfold_backward(g, a.shape, 1, 8, 4)),
    "grid_sample bilinear": (T(IMG, GRID), lambda x, g: F.grid_sample(x, g, align_corners=False)),
    "grid_sample nearest reflection": (T(IMG, GRID), lambda x, g: F.grid_sample(x, g, mode="nearest",
                                                                                  padding_mode="reflection",
                                                                                  align_corners=False)),
    "grid_sample bicubic border": (T(IMG, GRID), lambda x, g: F.grid_sample(x, g, mode="bicubic", padding_mode="border",
                                                                             align_corners=True)),
    "grid_sample 3d trilinear": (T(VOL, GRID3), lambda x, g: F.grid_sample(x, g, align_corners=False)),
    "embedding_bag sum": (T(EB_IDX, EB_W, EB_OFF), lambda i, w, o: F.embedding_bag(i, w, o, mode="sum")),
    "embedding_bag mean backward": (T(EB_GRAD, EB_IDX, EB_OFF), lambda g, i, o: aten._embedding_bag_backward(
        g, i, o, torch.repeat_interleave(torch.arange(2048, device=i.device), 20), torch.full_like(o, 20), o,
        100_000, False, 1, False, None, -1)),
    "grid_sample bilinear backward": (T(GS_GRAD, IMG, GRID), lambda go, x, g: aten.grid_sampler_2d_backward(
        go, x, g, 0, 0, False, [True, True])),
    "grid_sample 3d trilinear far": (T(VOL_FAR, GRID_FAR), lambda x, g: F.grid_sample(x, g, align_corners=False)),
    "grid_sample 3d nearest far": (T(VOL_FAR, GRID_FAR), lambda x, g: F.grid_sample(x, g, mode="nearest",
                                                                                      align_corners=False)),
    "linalg.cholesky 5x5": (T(SPD5), lambda a: torch.linalg.cholesky(a)),
    "linalg.inv 5x5": (T(SPD5), lambda a: torch.linalg.inv(a)),
    "linalg.cross [5, 3]": (T(A[:5, :3], B[:5, :3]), lambda a, b: torch.linalg.cross(a, b)),
    "add [N, 3] + [3]": (T(A.view(-1)[:3 * 349525].view(349525, 3), B[0, :3]), lambda a, b: a + b),
    "mul [N, 16] * [16]": (T(A.view(65536, 16), B[0, :16]), lambda a, b: a * b),
    "mul [N, 64] * [N, 1]": (T(A.view(16384, 64), COL), lambda a, b: a * b),
    "mul [N, 16] * [N, 1]": (T(A.view(65536, 16), COL.repeat(4, 1)), lambda a, b: a * b),
    "kron 64x64 16x16": (T(A[:64, :64], B[:16, :16]), lambda a, b: torch.kron(a, b)),
    "nansum": (T(A_NAN), lambda a: torch.nansum(a)),
    "nansum dim1": (T(A_NAN), lambda a: torch.nansum(a, 1)),
    "addr": (T(A, B[0], B[1]), lambda m, u, v: torch.addr(m, u, v)),
    "index_fill rows": (T(A, IDX[0, :100]), lambda a, i: a.index_fill(0, i, 2.0)),
    "index_fill columns": (T(A, IDX[0, :100]), lambda a, i: a.index_fill(1, i, 2.0)),
    "to half, rows of 16": (T(A.view(32768, 32)), lambda a: a[:, :16].half()),
    "expand [N, 1] to [N, 64]": (T(COL), lambda c: c.expand(16384, 64).contiguous()),
    # session 42: ops that ran through the host fallback before
    "interpolate bilinear antialias 512 -> 224": (T(IMG_512), lambda x: F.interpolate(
        x, size=(224, 224), mode="bilinear", antialias=True)),
    "interpolate bicubic antialias 512 -> 224": (T(IMG_512), lambda x: F.interpolate(
        x, size=(224, 224), mode="bicubic", antialias=True)),
    "histogram 100 bins": (T(A.view(-1)), lambda a: torch.histogram(a, bins=100)),
    "histogram 100 bins weighted": (T(A.view(-1), B.view(-1).abs()),
                                    lambda a, w: torch.histogram(a, bins=100, range=(-2.0, 2.0), weight=w)),
    "histogramdd 16^3 bins": (T(A.view(-1, 4)[:, :3].contiguous()), lambda p: torch.histogramdd(p, bins=[16, 16, 16])),
    "fractional_max_pool2d 3 -> 32": (T(IMG, FMP_SAMPLES), lambda x, u: F.fractional_max_pool2d(
        x, 3, output_size=(32, 32), _random_samples=u)),
    "lstsq gelsy [64, 100, 20]": (T(LS_A, LS_B), lambda a, b: torch.linalg.lstsq(a, b, driver="gelsy")),
    "lstsq gelsd [64, 100, 20]": (T(LS_A, LS_B), lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd")),
    "nonzero_static 1000 of 1M": (T(MASK), lambda m: torch.nonzero_static(m, size=1000)),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="cases to run (default all): " + ", ".join(CASES))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    os.environ.setdefault("AXON_THREADS", str(args.threads))   # both backends get the same thread count
    import torch_axon  # noqa: F401  (registers the axon device; reads AXON_THREADS)

    torch.set_num_threads(args.threads)
    print(f"{args.threads} threads, best of 5 x {args.reps} calls; microseconds per call")
    print("| case | cpu | axon | axon / cpu |\n|---|---|---|---|")
    for name in args.cases or CASES:
        make, fn = CASES[name]
        cpu_in, axon_in = make("cpu"), make("axon")
        cpu = best_us(lambda: fn(*cpu_in), "cpu", args.reps)
        axon = best_us(lambda: fn(*axon_in), "axon", args.reps)
        flag = " <<" if axon / cpu > 1.5 else ""
        print(f"| {name} | {cpu:.1f} | {axon:.1f} | {axon / cpu:.2f}{flag} |", flush=True)


if __name__ == "__main__":
    main()
