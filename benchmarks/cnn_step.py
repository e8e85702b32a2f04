"""Eager CNN steps on axon against torch CPU in the same process: a MobileNetV2-shaped network (inverted residual
blocks: 1x1 expansion, depthwise 3x3 of stride 1 and 2, 1x1 projection, batch norm, ReLU6, residual adds; random
weights) for a training step (forward, cross-entropy, backward, SGD with momentum) and for inference.

    .venv/bin/python benchmarks/cnn_step.py --threads 2 [--batch 16] [--size 128] [--trace]

Prints milliseconds per step (best of --rounds) and axon / CPU. --trace adds libaxon's kernel time per kernel name
over one axon training step (torch_axon._C._trace_records)."""

from __future__ import annotations

import argparse
import collections
import copy
import time

import torch
import torch.nn as nn

import torch_axon

# MobileNetV2's stages: (expansion t, output channels c, blocks n, first stride s)
STAGES = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, t: int):
        super().__init__()
        hid = cin * t
        layers: list[nn.Module] = []
        if t != 1:
            layers += [nn.Conv2d(cin, hid, 1, bias=False), nn.BatchNorm2d(hid), nn.ReLU6()]
        layers += [nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False), nn.BatchNorm2d(hid), nn.ReLU6(),
                   nn.Conv2d(hid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def mobilenet_v2(classes: int = 100) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
    c = 32
    for t, cout, n, s in STAGES:
        for i in range(n):
            layers.append(InvertedResidual(c, cout, s if i == 0 else 1, t))
            c = cout
    layers += [nn.Conv2d(c, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(), nn.AdaptiveAvgPool2d(1),
               nn.Flatten(), nn.Linear(1280, classes)]
    return nn.Sequential(*layers)


def sync(device: str) -> None:
    if device == "axon":
        torch.axon.synchronize()


def make_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, train: bool):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        if train:
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        else:
            with torch.no_grad():
                model(x)

    return step


def best_ms(step, device: str, rounds: int) -> float:
    for _ in range(2):
        step()
    sync(device)
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        step()
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--trace", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base = mobilenet_v2()
    x = torch.randn(args.batch, 3, args.size, args.size)
    y = torch.randint(0, 100, (args.batch,))
    print(f"MobileNetV2-shaped, batch {args.batch}, {args.size} x {args.size}, {args.threads} threads; ms per step")
    print("| step | cpu | axon | axon / cpu |\n|---|---|---|---|")
    for train in (True, False):
        ms = {}
        for device in ("cpu", "axon"):
            model = copy.deepcopy(base).to(device).train(train)
            ms[device] = best_ms(make_step(model, x.to(device), y.to(device), train), device, args.rounds)
        name = "training" if train else "inference"
        print(f"| {name} | {ms['cpu']:.1f} | {ms['axon']:.1f} | {ms['axon'] / ms['cpu']:.2f} |", flush=True)
    if args.trace:
        model = copy.deepcopy(base).to("axon")
        step = make_step(model, x.to("axon"), y.to("axon"), True)
        step()
        sync("axon")
        torch_axon._C._trace_enable(True)
        step()
        sync("axon")
        torch_axon._C._trace_enable(False)
        total: collections.Counter = collections.Counter()
        for name, _dev, _stream, start, end, _bytes in torch_axon._C._trace_records():
            total[name] += (end - start) / 1e6
        print("\nkernel time over one axon training step (ms):")
        for name, ms_ in total.most_common(10):
            print(f"  {name:28s} {ms_:8.2f}")


if __name__ == "__main__":
    main()
