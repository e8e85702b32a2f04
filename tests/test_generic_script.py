"""A training script written for CUDA with only torch.accelerator and device-generic APIs runs unchanged on axon."""

import os
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).parent / "scripts" / "train_generic.py"


def test_cuda_style_training_script_runs_unchanged_on_axon():
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("OK ") and last.endswith("on axon:0"), out.stdout
    first_loss, final_loss = (float(v) for v in last.split()[1:3])
    assert final_loss < first_loss


_BACKWARD_THEN_EXIT = """
import torch
x = torch.randn(4, 4, device="axon", requires_grad=True)
(x * x).sum().backward()
print("done")
"""


def test_a_process_exits_cleanly_right_after_a_backward_on_axon():
    # Regression: exiting while PyTorch's autograd thread for axon was still releasing the finished graph killed the
    # process in std::terminate (status 134) in about half the runs.
    for _ in range(4):
        out = subprocess.run([sys.executable, "-c", _BACKWARD_THEN_EXIT], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == "done", (out.returncode, out.stderr[-2000:])
