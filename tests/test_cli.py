"""The `axon` command (torch_axon/cli): exit codes, the JSON of each command, the HTML report's plots, a preset and a
user factory end to end, and bad input (unknown preset, a factory that raises, a model too big for the device,
invalid price or batch): each a one-line error naming the problem and a non-zero exit, never a traceback.

Commands run in subprocesses (`python -m torch_axon.cli`, what the console script runs) with tiny models, few steps
and a subset of the bench backends, so the file stays within a couple of minutes."""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import SUBPROCESS_TIMEOUT

TESTS = Path(__file__).resolve().parent


def axon(*args, env=None, cwd=TESTS, timeout=SUBPROCESS_TIMEOUT * 2):
    full_env = dict(os.environ, AXON_DEVICE_COUNT="1", PYTHONPATH=str(TESTS), **(env or {}))
    full_env.pop("AXON_DEVICE_MEMORY", None) if "AXON_DEVICE_MEMORY" not in (env or {}) else None
    return subprocess.run([sys.executable, "-m", "torch_axon.cli", *args], env=full_env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def axon_here(args, capsys, monkeypatch):
    """main(), what the console script calls, in this process (no interpreter start-up: cheaper)."""
    from torch_axon.cli import main

    monkeypatch.syspath_prepend(str(TESTS))
    code = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def assert_one_line_error(p, *words):
    assert p.returncode != 0, p.stdout
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    assert lines[0].startswith("axon "), lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])


# ---- info and presets ------------------------------------------------------------------------------------------


def test_info_json_is_the_pin_manifest():
    p = axon("info", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["schema"] == "axon-info/1"
    for key in ("torch", "torch-axon", "libaxon", "python", "torch_axon_commit"):
        assert key in info["versions"]
    assert any(pin.startswith("torch==") for pin in info["pins"])
    assert info["devices"] and {"index", "name", "threads", "total_memory", "free_memory", "cpu_features"} <= set(
        info["devices"][0])
    assert {"cpu_model", "cpu_count", "torch_threads"} <= set(info["host"])
    assert set(info["compiler"]) == {"c_compiler", "axon_backend", "axon_backend_status"}
    assert info["cache"]["axon"] and "system" in info["os"]


def test_info_text_and_presets(capsys, monkeypatch):
    p = axon_here(["info"], capsys, monkeypatch)
    assert p.returncode == 0 and "axon:0" in p.stdout and "pins:" in p.stdout, p.stderr
    p = axon_here(["presets", "--json"], capsys, monkeypatch)
    assert p.returncode == 0
    names = {x["name"] for x in json.loads(p.stdout)}
    assert names == {"mlp", "cnn", "hf:minilm", "hf:gpt2-tiny", "hf:llama-tiny", "hf:bert-base"}


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "axon"
    assert script.exists(), "run make install: pyproject.toml's [project.scripts] installs it"
    p = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert p.returncode == 0 and "check" in p.stdout and "bench" in p.stdout


# ---- check -----------------------------------------------------------------------------------------------------

OP_KEYS = {"op", "status", "calls", "dtypes", "example_shapes", "error"}
OUT_KEYS = {"name", "shape", "dtype", "max_abs_err", "max_rel_err", "pass", "note"}


def test_check_preset_end_to_end_json():
    p = axon("check", "mlp", "--json", "-")
    assert p.returncode == 0, p.stderr + p.stdout[-2000:]
    r = json.loads(p.stdout)
    assert r["schema"] == "axon-check/1" and r["passed"] and r["failures"] == []
    assert r["model"] == "mlp" and r["dtype"] == "float32" and r["batch"] == 32
    ops = {o["op"]: o for o in r["ops"]}
    assert all(OP_KEYS <= set(o) for o in r["ops"])
    assert ops["aten.addmm.default"]["status"] == "native" and ops["aten.addmm.default"]["calls"] == 2
    assert ops["aten.addmm.default"]["dtypes"] == ["float32,float32,float32"]
    assert r["op_signatures"] and {"op", "dtypes", "shapes", "status", "calls"} <= set(r["op_signatures"][0])
    assert r["eager"]["status"] == "ran" and r["eager"]["fallback_stats"] == {}
    (out,) = r["eager"]["outputs"]
    assert OUT_KEYS <= set(out) and out["pass"] and out["shape"] == [32, 256] and out["max_abs_err"] < 1e-4
    # Compiled runs when backend="axon" is registered, else it is reported and does not fail the check.
    assert r["compiled"]["status"] in ("ran", "not available"), r["compiled"]
    if r["compiled"]["status"] == "not available":
        assert r["compiled"]["reason"]


def test_check_train_user_factory_compares_gradients_in_bfloat16(capsys, monkeypatch):
    p = axon_here(["check", "cli_models:tiny", "--batch", "5", "--train", "--dtype", "bf16", "--json", "-"], capsys,
                  monkeypatch)
    assert p.returncode == 0, p.stderr + p.stdout[-2000:]
    r = json.loads(p.stdout)
    assert r["batch"] == 5 and r["dtype"] == "bfloat16" and r["train"]
    names = [o["name"] for o in r["eager"]["outputs"]]
    assert names[0] == "out" and "grad.0.weight" in names and "grad.2.bias" in names
    assert all(o["pass"] and o["dtype"] == "bfloat16" for o in r["eager"]["outputs"])
    assert r["tolerance"] == {"rtol": 2e-2, "atol": 2e-2}


def test_check_reports_host_fallback_and_strict_fails_it(capsys, monkeypatch):
    p = axon_here(["check", "cli_models:with_fallback", "--json", "-"], capsys, monkeypatch)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    status = {o["op"]: o["status"] for o in r["ops"]}
    assert status["aten.logaddexp.default"] == "host fallback" and status["aten.addmm.default"] == "native"
    assert r["eager"]["fallback_stats"] and all(o["pass"] for o in r["eager"]["outputs"])
    p = axon_here(["check", "cli_models:with_fallback", "--strict"], capsys, monkeypatch)
    assert p.returncode == 1
    assert "FAIL" in p.stdout and "--strict: aten.logaddexp.default" in p.stdout and "refused" in p.stdout


def test_without_the_compiled_backend_check_and_bench_report_eager_only(capsys, monkeypatch):
    """Before backend="axon" is registered, the compiled columns say why and the exit status stays 0."""
    from torch_axon.cli import bench, check

    reason = 'torch.compile backend "axon" is not registered (test)'
    monkeypatch.setattr(check, "compiled_backend_status", lambda: (False, reason))
    monkeypatch.setattr(bench, "compiled_backend_status", lambda: (False, reason))
    p = axon_here(["check", "cli_models:tiny", "--json", "-"], capsys, monkeypatch)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["passed"] and r["compiled"] == {"status": "not available", "reason": reason}
    p = axon_here(["bench", "cli_models:tiny", "--backends", "axon-compiled", "--json", "-"], capsys, monkeypatch)
    assert p.returncode == 0, p.stderr
    (b,) = json.loads(p.stdout)["backends"]
    assert b["status"] == "not available" and b["reason"] == reason


# ---- bench, report, trace -------------------------------------------------------------------------------------


def test_bench_json_and_html_report(tmp_path):
    out, html = tmp_path / "bench.json", tmp_path / "bench.html"
    p = axon("bench", "mlp", "--backends", "axon-eager,cpu-eager", "--steps", "4", "--warmup", "1", "--batch", "8",
             "--price-per-hour", "3.6", "--json", str(out), "--report", str(html))
    assert p.returncode == 0, p.stderr
    assert "axon-eager" in p.stdout and "cpu-eager" in p.stdout and "p99" in p.stdout
    r = json.loads(out.read_text())
    assert r["schema"] == "axon-bench/1" and r["batch"] == 8 and r["steps"] == 4 and r["price_per_hour"] == 3.6
    assert [b["name"] for b in r["backends"]] == ["axon-eager", "cpu-eager"]
    for b in r["backends"]:
        assert b["status"] == "ok", b
        lat = b["latency_ms"]
        assert len(b["samples_ms"]) == 4 and 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
        assert b["throughput"]["samples_per_s"] == pytest.approx(8e3 / lat["mean"])
        assert b["cost_per_1000_tasks"] == pytest.approx(3.6 / 3600 * 1000 / b["throughput"]["samples_per_s"])
        assert b["host_rss"] > 0 and b["errors"] == 0 and b["first_call_ms"] > 0
    assert r["backends"][0]["peak_device_memory"] > 0 and "peak_device_memory" not in r["backends"][1]
    page = html.read_text()
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(svgs) == 2, "latency and throughput plots (no compiled backend ran: a note instead)"
    for svg in svgs:
        ET.fromstring(svg)  # well-formed
    assert page.count("<circle") == 8  # one dot per timed step and backend
    assert "No compiled backend ran" in page
    # Self-contained: no script, no stylesheet or image links, nothing fetched.
    assert "<script" not in page and "<link" not in page and "src=" not in page
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)


def test_bench_compiled_backends_report_compile_times(tmp_path):
    html = tmp_path / "c.html"
    p = axon("bench", "mlp", "--backends", "axon-compiled", "--steps", "2", "--warmup", "0", "--json", "-",
             "--report", str(html))
    assert p.returncode == 0, p.stderr
    (b,) = json.loads(p.stdout)["backends"]
    if b["status"] == "not available":  # the compiler has not landed: eager only, still exit 0
        assert "not registered" in b["reason"]
        return
    assert b["status"] == "ok" and b["cold_compile_ms"] >= 0 and b["warm_compile_ms"] >= 0
    assert len(re.findall(r"<svg", html.read_text())) == 3


def test_trace_writes_a_chrome_trace(tmp_path):
    out = tmp_path / "t.json"
    p = axon("trace", "mlp", "-o", str(out))
    assert p.returncode == 0, p.stderr
    events = json.loads(out.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X"]
    assert {"matmul", "layer_norm"} <= {e["name"] for e in kernels}, {e["name"] for e in kernels}
    assert all(e["dur"] >= 0 for e in kernels) and "device commands" in p.stdout


# ---- bad input ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, words", [
    (["check", "resnet9000"], ["unknown preset 'resnet9000'", "axon presets"]),
    (["check", "cli_models:raises"], ["factory 'cli_models:raises' raised", "the weights file is missing"]),
    (["bench", "mlp", "--price-per-hour", "-1"], ["invalid price per hour '-1'"]),
])
def test_bad_input_is_one_line_and_nonzero(args, words):
    assert_one_line_error(axon(*args), *words)


@pytest.mark.parametrize("args, words", [
    (["bench", "hf:nope", "--backends", "cpu-eager"], ["unknown preset 'hf:nope'"]),
    (["check", "cli_models:not_a_model"], ["must return (model, inputs)"]),
    (["check", "cli_models:missing"], ["has no function 'missing'"]),
    (["check", "no_such_module:f"], ["cannot import 'no_such_module'"]),
    (["check", "cli_models:with_fallback", "--batch", "2"], ["takes no batch argument"]),
    (["check", "mlp", "--batch", "0"], ["invalid batch '0'"]),
    (["bench", "mlp", "--batch", "many"], ["invalid batch 'many'"]),
    (["bench", "mlp", "--price-per-hour", "cheap"], ["invalid price per hour 'cheap'"]),
    (["bench", "mlp", "--price-per-hour", "nan"], ["invalid price per hour 'nan'"]),
    (["bench", "mlp", "--steps", "0"], ["invalid steps '0'"]),
    (["bench", "mlp", "--warmup", "-2"], ["invalid warmup '-2'"]),
    (["bench", "mlp", "--backends", "tpu"], ["unknown backend tpu"]),
    (["bench", "mlp", "--json", "/no/such/dir/b.json"], ["no such directory"]),
    (["check", "mlp", "--dtype", "int3"], ["unknown dtype 'int3'"]),
    (["trace", "mlp", "-o", "/no/such/dir/t.json"], ["no such directory"]),
])
def test_bad_input_in_process(args, words, capsys, monkeypatch):
    assert_one_line_error(axon_here(args, capsys, monkeypatch), *words)


def test_a_model_too_big_for_the_device_is_one_line():
    small = {"AXON_DEVICE_MEMORY": "256K"}  # the mlp's weights alone are 2 MiB
    p = axon("check", "mlp", env=small)
    assert_one_line_error(p, "does not fit in axon device memory", "out of memory")
    p = axon("bench", "mlp", "--backends", "axon-eager", "--steps", "2", env=small)
    assert_one_line_error(p, "axon-eager", "out of device memory")
    assert "axon-eager: error: out of device memory" in p.stdout  # and in the table
