"""GEMM epilogues through torch.compile: the elementwise group after a Linear (its GELU, its residual add) runs inside
the product's command, as tier 1's generated C, with the same bits as when the group runs as a command of its own
(AXON_GEMM_EPILOGUE=0) and within float32 tolerance of CPU. Each configuration runs in a fresh process (the switch is
read when a program is compiled; AXON_COMPILE_SYNC=1 has tier 1 ready before the first call)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import collections, json, sys
    import torch
    import torch_axon
    import torch_axon.compile as tc

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = torch.nn.Linear(256, 256), torch.nn.Linear(256, 256)

        def forward(self, x):
            return self.down(torch.nn.functional.gelu(self.up(x))) + x

    torch.manual_seed(0)
    model = Block()
    x = torch.randn(int(sys.argv[2]), 256)
    ref = model(x)
    compiled = torch.compile(model.to("axon"), backend="axon")
    with torch.no_grad():
        compiled(x.to("axon"))
        torch.axon.synchronize()
        torch_axon._C._trace_records()
        torch_axon._C._trace_enable(True)
        out = compiled(x.to("axon")).cpu()
        torch.axon.synchronize()
        torch_axon._C._trace_enable(False)
    names = collections.Counter(r[0] for r in torch_axon._C._trace_records())
    torch.save(out, sys.argv[1])
    print(json.dumps({"names": names, "err": (out - ref).abs().max().item(), "tier1": tc.tier1_groups()}))
""")


def run_child(tmp_path, rows: int, epilogues: bool) -> tuple[dict, object]:
    import torch

    path = tmp_path / f"out-{rows}-{int(epilogues)}.pt"
    env = dict(os.environ, AXON_CACHE_DIR=str(tmp_path / "cache"), AXON_COMPILE_SYNC="1",
               AXON_GEMM_EPILOGUE="1" if epilogues else "0")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(rows)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), torch.load(path)


# 512 rows: the product is split by rows and each block's epilogue runs as the block is finished; 24: the whole
# product first, then the epilogue over its rows (the path of libraries and small products)
@pytest.mark.parametrize("rows", [512, 24])
def test_linear_epilogues_run_inside_the_product_with_the_same_bits(tmp_path, rows):
    fused, out_fused = run_child(tmp_path, rows, epilogues=True)
    apart, out_apart = run_child(tmp_path, rows, epilogues=False)
    assert fused["tier1"] >= 1 and apart["tier1"] >= 1, (fused, apart)   # the groups run as generated C
    assert fused["names"].get("matmul") == 2 and "tier1_fused" not in fused["names"], fused
    assert apart["names"].get("tier1_fused", 0) >= 1, apart
    assert fused["err"] < 1e-4 and apart["err"] < 1e-4, (fused, apart)
    assert (out_fused == out_apart).all()
