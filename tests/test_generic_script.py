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
