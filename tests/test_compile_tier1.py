"""Tier 1 through torch.compile: the fused groups of a compiled model run as generated C once it is compiled, with
the same results as tier 0; the on-disk cache is shared across processes and survives a corrupt entry; without a C
compiler tier 0 keeps running. Each scenario runs in a fresh process (the cache is what crosses between them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# The child compiles a small MLP-with-activations under torch.compile, runs it, and prints what tier 1 did.
CHILD = textwrap.dedent("""
    import json, os, sys
    import torch
    import torch_axon
    import torch_axon.compile as tc

    class Block(torch.nn.Module):
        # a gated MLP with a residual: two elementwise chains that fuse (gelu * sigmoid, + x then tanh)
        def __init__(self):
            super().__init__()
            self.up, self.down = torch.nn.Linear(32, 64), torch.nn.Linear(64, 32)

        def forward(self, x):
            h = self.up(x)
            return torch.tanh(self.down(torch.nn.functional.gelu(h) * torch.sigmoid(h)) + x)

    torch.manual_seed(0)
    model = Block()
    x = torch.randn(16, 32)
    ref = model(x)
    model = model.to("axon")
    compiled = torch.compile(model, backend="axon")
    with torch.no_grad():
        first = compiled(x.to("axon")).cpu()
        ready_at_start = tc.tier1_groups()
        ready = tc.tier1_groups(wait=True)
        after = compiled(x.to("axon")).cpu()   # on tier 1 now, where it is ready
    err = max((first - ref).abs().max().item(), (after - ref).abs().max().item())
    agree = (after - first).abs().max().item()
    print(json.dumps({"ready_at_start": ready_at_start, "ready": ready, "err": err, "agree": agree,
                      "programs": tc.stats()["programs"]}))
""")


def run_child(cache: Path, **env) -> dict:
    full = dict(os.environ, AXON_CACHE_DIR=str(cache), **env)
    full.pop("AXON_COMPILE_SYNC", None) if "AXON_COMPILE_SYNC" not in env else None
    proc = subprocess.run([sys.executable, "-c", CHILD], env=full, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def shared_objects(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.so"))


def test_tier1_runs_compiled_groups_and_agrees_with_tier0(tmp_path):
    out = run_child(tmp_path, AXON_COMPILE_SYNC="1")
    assert out["programs"] >= 1
    assert out["ready"] >= 1, out                  # GELU and SiLU after their GEMMs are fused groups
    assert out["ready_at_start"] == out["ready"]   # AXON_COMPILE_SYNC=1: compiled before the first run
    assert out["err"] < 1e-4, out                  # float32 against CPU eager
    assert out["agree"] < 1e-6, out                # tier 1 against tier 0 (the first call, compiled synchronously too)
    assert len(shared_objects(tmp_path)) >= 1


def test_cache_is_shared_across_processes(tmp_path):
    run_child(tmp_path, AXON_COMPILE_SYNC="1")
    entries = shared_objects(tmp_path)
    assert entries
    stamps = {p: p.stat().st_mtime_ns for p in entries}
    # A second process, compiling in the background as usual, finds the entry at compile time: ready at once.
    out = run_child(tmp_path)
    assert out["ready_at_start"] >= 1, out
    assert shared_objects(tmp_path) == entries
    assert {p: p.stat().st_mtime_ns for p in entries} == stamps   # loaded, not rebuilt


def test_corrupt_cache_entry_is_rebuilt(tmp_path):
    run_child(tmp_path, AXON_COMPILE_SYNC="1")
    for so in shared_objects(tmp_path):
        so.write_bytes(b"not a shared object")
    out = run_child(tmp_path, AXON_COMPILE_SYNC="1")
    assert out["ready"] >= 1 and out["err"] < 1e-4, out
    assert all(p.read_bytes()[:4] == b"\x7fELF" for p in shared_objects(tmp_path))


@pytest.mark.parametrize("cc", ["", "/bin/false"])
def test_without_a_working_compiler_tier0_runs(tmp_path, cc):
    out = run_child(tmp_path, AXON_CC=cc, AXON_COMPILE_SYNC="1")
    assert out["ready"] == 0, out
    assert out["err"] < 1e-4, out
    assert not shared_objects(tmp_path)


# Rows the generated kernels see: a contiguous 4-D operand with short rows (the launch merges its dimensions into
# one row) and an expand that the program makes a view (its row stride 0 where its type says dense: the kernel reads
# a block of its one value). Both against eager and tier 0; the tier 0 run is AXON_CC="" (no compiler).
ROWS_CHILD = textwrap.dedent("""
    import json
    import torch
    import torch_axon
    import torch_axon.compile as tc

    def f(x, a, b):
        m = (a @ b).view(8, 4, 1, 1).expand(8, 4, 6, 5)
        return torch.where(x <= 0, 0.0, m / 30.0) + torch.where(x > 1, x, 0.5 * x)

    torch.manual_seed(0)
    x, a, b = torch.randn(8, 4, 6, 5), torch.randn(8, 3), torch.randn(3, 4)
    ref = f(x, a, b)
    compiled = torch.compile(f, backend="axon")
    with torch.no_grad():
        out = compiled(x.to("axon"), a.to("axon"), b.to("axon")).cpu()
    print(json.dumps({"ready": tc.tier1_groups(wait=True), "err": (out - ref).abs().max().item(),
                      "out": out.flatten().tolist()}))
""")


def test_tier1_rows_merge_and_runtime_broadcasts_match_eager_and_tier0(tmp_path):
    def run(**env):
        full = dict(os.environ, AXON_CACHE_DIR=str(tmp_path), AXON_COMPILE_SYNC="1", **env)
        proc = subprocess.run([sys.executable, "-c", ROWS_CHILD], env=full, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    t1, t0 = run(), run(AXON_CC="")
    assert t1["ready"] >= 1 and t0["ready"] == 0, (t1["ready"], t0["ready"])
    assert t1["err"] < 1e-5 and t0["err"] < 1e-5, (t1["err"], t0["err"])
    assert max(abs(p - q) for p, q in zip(t1["out"], t0["out"])) < 1e-6
