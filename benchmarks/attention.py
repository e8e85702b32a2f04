"""F.scaled_dot_product_attention forward and forward+backward on axon (libaxon's fused kernel) against PyTorch CPU,
measured in the same run, alternating the two so that load from other processes hits both alike, with a short pause
before each timed call: both keep worker threads spinning for a while after an op (PyTorch's OpenMP pool, axon's
pool), and without the pause each would steal the cores from the other.

    python benchmarks/attention.py [--shape B,H,L,E] [--reps N] [--threads N] [--dtype float32]
                                   [--layout blhe] [--mask pad] [--calls N]

Reports milliseconds (minimum and median over the repetitions) for the plain and the causal case. Both backends get
the same number of threads (torch.set_num_threads and AXON_THREADS). --layout blhe passes q, k and v as HF models do
(heads split off [B, L, H * E] by view + transpose); --mask pad adds BERT's padding mask, a float [B, 1, 1, S]
expanded to [B, 1, L, S] (PyTorch allows no mask with is_causal, so the causal case is left out). --calls N times
N calls back to back per sample (one synchronize at the end; reported per call): the steady state of a model's
layers, without the wake-up of both backends' idle threads in every sample."""

from __future__ import annotations

import argparse
import os
import statistics
import time


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="4,8,512,64", help="B,H,L,E (S = L)")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--layout", choices=("bhle", "blhe"), default="bhle", help="memory order of q, k, v")
    p.add_argument("--mask", choices=("none", "pad"), default="none")
    p.add_argument("--calls", type=int, default=1, help="calls per timed sample")
    return p.parse_args()


ARGS = parse()
os.environ.setdefault("AXON_THREADS", str(ARGS.threads))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_axon  # noqa: E402, F401

torch.set_num_threads(ARGS.threads)
PAUSE_S = 0.05


def make(device, shape, dtype):
    g = torch.Generator().manual_seed(0)
    b, h, n, e = shape
    if ARGS.layout == "blhe":
        q, k, v, grad = (torch.randn(b, n, h, e, generator=g).to(device, dtype).transpose(1, 2) for _ in range(4))
    else:
        q, k, v, grad = (torch.randn(shape, generator=g).to(device, dtype) for _ in range(4))
    mask = None
    if ARGS.mask == "pad":
        pad = torch.zeros(b, 1, 1, n)
        pad[: b // 2, ..., n - n // 4:] = -1e4  # half the sequences padded by a quarter
        mask = pad.to(device, dtype).expand(b, 1, n, n)
    return [t.detach().requires_grad_() for t in (q, k, v)], grad, mask


def sync(device):
    if device == "axon":
        torch.axon.synchronize()


def step(device, leaves, grad, mask, causal, backward, calls=1):
    for _ in range(calls):
        if backward:
            out = F.scaled_dot_product_attention(*leaves, attn_mask=mask, is_causal=causal)
            out.backward(grad)
        else:
            with torch.no_grad():
                F.scaled_dot_product_attention(*leaves, attn_mask=mask, is_causal=causal)
    sync(device)


def main():
    shape = tuple(int(x) for x in ARGS.shape.split(","))
    dtype = getattr(torch, ARGS.dtype)
    inputs = {d: make(d, shape, dtype) for d in ("cpu", "axon")}
    print(f"shape {shape} {ARGS.dtype}, layout {ARGS.layout}, mask {ARGS.mask}, {ARGS.threads} threads, "
          f"{ARGS.reps} reps of {ARGS.calls} call(s); ms per call: min / median")
    for causal in (False, True) if ARGS.mask == "none" else (False,):
        for backward in (False, True):
            times = {"cpu": [], "axon": []}
            for d in times:
                step(d, *inputs[d], causal, backward)  # warm up
            for _ in range(ARGS.reps):
                for d in times:
                    time.sleep(PAUSE_S)
                    t = time.perf_counter()
                    step(d, *inputs[d], causal, backward, ARGS.calls)
                    times[d].append((time.perf_counter() - t) * 1e3 / ARGS.calls)
            what = ("fwd+bwd" if backward else "fwd") + (" causal" if causal else "")
            cpu, ax = times["cpu"], times["axon"]
            print(f"{what:16s} cpu {min(cpu):7.1f} / {statistics.median(cpu):7.1f}   "
                  f"axon {min(ax):7.1f} / {statistics.median(ax):7.1f}   "
                  f"axon/cpu (median) {statistics.median(ax) / statistics.median(cpu):.2f}")


if __name__ == "__main__":
    main()
