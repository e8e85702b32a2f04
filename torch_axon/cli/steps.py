"""One step of a model, the same on every device and backend: inference under no_grad, or with --train a forward,
a scalar loss, backward and (for bench) an SGD update."""

from __future__ import annotations

import torch

from torch_axon.cli.common import CliError, flatten


def loss_of(out) -> torch.Tensor:
    """A scalar that depends on every floating-point output: each output times a fixed random tensor (seeded by its
    position, the same on every device), summed in float32. The gradient reaching each output is then that fixed
    tensor, so gradients are compared without cancellation that a loss of the outputs' own values would cause."""
    terms = []
    for i, (_, t) in enumerate(flatten(out)):
        if t.is_floating_point() and t.requires_grad:
            w = torch.randn(t.shape, generator=torch.Generator().manual_seed(1000 + i)).to(t.device)
            terms.append((t.float() * w).sum() / max(1, t.numel()) ** 0.5)
    if not terms:
        raise CliError("--train: the model returned no floating-point output that requires grad")
    return torch.stack(terms).sum()


def forward(fn, args: tuple, kwargs: dict, train: bool):
    """Returns the outputs (and runs backward into the parameters' .grad with train)."""
    if not train:
        with torch.no_grad():
            return fn(*args, **kwargs)
    out = fn(*args, **kwargs)
    loss_of(out).backward()
    return out


def grads(model: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    return [(f"grad.{n}", p.grad) for n, p in model.named_parameters() if p.grad is not None]


def sync(device: str) -> None:
    if device.startswith("axon"):
        torch.axon.synchronize()


class Step:
    """A callable running one benchmark step of `fn` (a module or its compiled form) over fixed inputs."""

    def __init__(self, model: torch.nn.Module, fn, args: tuple, kwargs: dict, train: bool, device: str):
        self.fn, self.args, self.kwargs, self.train, self.device = fn, args, kwargs, train, device
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=1e-6) if train else None

    def __call__(self) -> None:
        forward(self.fn, self.args, self.kwargs, self.train)
        if self.opt is not None:
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
        sync(self.device)
