"""The model zoo: small models built from Hugging Face configs with random weights (BERT, GPT-2, Llama, T5, ViT, a
Mixture-of-Experts model), a CNN, a depthwise-separable CNN (MobileNet/ConvNeXt blocks with group norm) and an
LSTM, forward and backward on axon against the same model on CPU, and the same
step in training mode with the host fallback forbidden (AXON_STRICT's switch, torch_axon.set_strict).

Tolerances: float32 throughout; the outputs agree to 1e-4 and the weight gradients to 1e-3 relative (the sums run in
another order: libaxon's GEMM blocks and float64 norm statistics against MKL's and oneDNN's), with an absolute floor
of 1e-4 times the gradient's largest magnitude.
"""

import copy
import os

import pytest
import torch
import torch.nn as nn

import torch_axon
import torch_axon.compile

transformers = pytest.importorskip("transformers", reason="the model zoo needs transformers (make venv installs it)")
transformers.logging.set_verbosity_error()

BATCH, SEQ, VOCAB = 2, 16, 128
COMMON = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)


def _ids(seed=0, shape=(BATCH, SEQ)):
    return torch.randint(0, VOCAB, shape, generator=torch.Generator().manual_seed(seed))


def bert():
    model = transformers.BertForSequenceClassification(
        transformers.BertConfig(max_position_embeddings=64, num_labels=3, **COMMON))
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, SEQ // 2:] = 0  # a padded sequence: the attention mask matters
    return model, dict(input_ids=_ids(), attention_mask=mask, labels=torch.tensor([0, 2]))


def gpt2():
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0))
    ids = _ids(1)
    return model, dict(input_ids=ids, labels=ids)


def llama():
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=0, eos_token_id=0, pad_token_id=0, **COMMON))
    ids = _ids(2)
    return model, dict(input_ids=ids, labels=ids)


def t5():
    model = transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, decoder_start_token_id=0,
        pad_token_id=0, eos_token_id=1))
    return model, dict(input_ids=_ids(3), labels=_ids(4, (BATCH, 8)))


def vit():
    config = transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3, num_labels=5,
                                    **{k: v for k, v in COMMON.items() if k != "vocab_size"})
    model = transformers.ViTForImageClassification(config)
    pixels = torch.randn(BATCH, 3, 32, 32, generator=torch.Generator().manual_seed(5))
    return model, dict(pixel_values=pixels, labels=torch.tensor([1, 4]))


def mixtral():
    model = transformers.MixtralForCausalLM(transformers.MixtralConfig(
        num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=0, **COMMON))
    ids = _ids(6)
    return model, dict(input_ids=ids, labels=ids)


class SmallCNN(nn.Module):
    """A ResNet-style network: convolutions, batch norm, ReLU, a residual add, max and adaptive average pooling."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.MaxPool2d(2))
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                   nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16))
        self.down = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(), nn.Dropout(0.1))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes))

    def forward(self, pixel_values, labels):
        x = self.stem(pixel_values)
        x = torch.relu(x + self.block(x))
        logits = self.head(self.down(x))
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


def cnn():
    pixels = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(7))
    return SmallCNN(), dict(pixel_values=pixels, labels=torch.tensor([0, 3, 9, 3]))


class SmallMobileNet(nn.Module):
    """Depthwise-separable blocks (MobileNet and ConvNeXt style): depthwise 3x3 convolutions of stride 1 and 2 and a
    7x7 one, group norm, SiLU and GELU, pointwise 1x1 convolutions and a residual add."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.GroupNorm(4, 16), nn.SiLU(),
                                nn.Conv2d(16, 32, 1))
        self.down = nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=32)
        self.dw7 = nn.Sequential(nn.Conv2d(32, 32, 7, padding=3, groups=32), nn.GroupNorm(8, 32),
                                 nn.Conv2d(32, 64, 1), nn.GELU(), nn.Conv2d(64, 32, 1))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes))

    def forward(self, pixel_values, labels):
        x = self.down(self.dw(self.stem(pixel_values)))
        logits = self.head(x + self.dw7(x))
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


def mobilenet():
    pixels = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(8))
    return SmallMobileNet(), dict(pixel_values=pixels, labels=torch.tensor([2, 5, 9, 0]))


class SmallLSTM(nn.Module):
    """An embedding, a two-layer LSTM with dropout between layers, and a linear head over the last state."""

    def __init__(self, classes=4):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.lstm = nn.LSTM(32, 48, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(48, classes)

    def forward(self, input_ids, labels):
        out, _ = self.lstm(self.embed(input_ids))
        logits = self.head(out[:, -1])
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


def lstm():
    return SmallLSTM(), dict(input_ids=_ids(8), labels=torch.tensor([1, 3]))


MODELS = {"bert": bert, "gpt2": gpt2, "llama": llama, "t5": t5, "vit": vit, "mixtral": mixtral, "cnn": cnn,
          "mobilenet": mobilenet, "lstm": lstm}


def _loss_and_logits(out):
    if isinstance(out, dict):
        return out["loss"], out["logits"]
    return out.loss, out.logits


def _step(model, inputs, device):
    model = model.to(device)
    batch = {k: v.to(device) for k, v in inputs.items()}
    loss, logits = _loss_and_logits(model(**batch))
    loss.backward()
    grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
    return loss.detach().cpu(), logits.detach().cpu(), grads


def _close(got, want, rtol, what):
    atol = max(1e-4 * want.abs().max().item(), 1e-6)
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("name", MODELS)
def test_forward_and_backward_match_cpu(name):
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model.eval()  # dropout off: the two devices draw different random numbers
    twin = copy.deepcopy(model)
    loss_cpu, logits_cpu, grads_cpu = _step(model, inputs, "cpu")
    loss_axon, logits_axon, grads_axon = _step(twin, inputs, "axon")
    _close(logits_axon, logits_cpu, 1e-4, f"{name} logits")
    _close(loss_axon, loss_cpu, 1e-4, f"{name} loss")
    assert grads_axon.keys() == grads_cpu.keys()
    for param, g in grads_cpu.items():
        _close(grads_axon[param], g, 1e-3, f"{name} grad of {param}")


@pytest.mark.parametrize("name", MODELS)
def test_a_training_step_runs_with_no_host_fallback(name):
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model.train()  # dropout and batch-norm statistics on
    model = model.to("axon")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = {k: v.to("axon") for k, v in inputs.items()}
    torch_axon.reset_fallback_stats()
    torch_axon.set_strict(True)
    try:
        loss, _ = _loss_and_logits(model(**batch))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.axon.synchronize()
    finally:
        torch_axon.set_strict(os.environ.get("AXON_STRICT") == "1")
    assert torch_axon.fallback_stats() == {}
    assert torch.isfinite(loss).item()


@pytest.mark.parametrize("name", MODELS)
def test_compiled_forward_and_backward_match_cpu(name):
    # torch.compile(backend="axon") on the zoo, inference and training graphs: the same tolerances as eager axon,
    # and some partition really ran as a compiled program (not the whole graph left eager)
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model.eval()
    twin = copy.deepcopy(model)
    loss_cpu, logits_cpu, grads_cpu = _step(model, inputs, "cpu")
    torch._dynamo.reset()
    torch_axon.compile.reset_stats()
    compiled = torch.compile(twin.to("axon"), backend="axon")
    # Dynamo leaves nn.LSTM out of its graphs unless allow_rnn is set
    with torch._dynamo.config.patch(allow_rnn=True):
        loss_axon, logits_axon, grads_axon = _step(compiled, inputs, "axon")
    stats = torch_axon.compile.stats()
    assert stats["program_calls"] > 0 and stats["eager_graphs"] == 0, stats
    _close(logits_axon, logits_cpu, 1e-4, f"{name} compiled logits")
    _close(loss_axon, loss_cpu, 1e-4, f"{name} compiled loss")
    assert grads_axon.keys() == {"_orig_mod." + k for k in grads_cpu} or grads_axon.keys() == grads_cpu.keys()
    for param, g in grads_cpu.items():
        got = grads_axon.get(param, grads_axon.get("_orig_mod." + param))
        _close(got, g, 1e-3, f"{name} compiled grad of {param}")
