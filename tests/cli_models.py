"""User factories for tests/test_cli.py (`axon check cli_models:tiny` with tests/ on the path): MODEL strings of the
form package.module:factory."""

import torch


class _ComplexLogAddExp(torch.nn.Module):
    def forward(self, x):
        # the log-add-exp of complex numbers has no native axon kernel: it takes the host fallback
        z = x.to(torch.complex64) / 4
        return x * torch.logaddexp(z, z.flip(-1)).real


def tiny(batch: int = 4):
    """A small model that takes --batch, returning a tuple of positional inputs."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    return model, (torch.randn(batch, 16),)


def with_fallback():
    """Inputs as a single tensor; one op runs through the host fallback."""
    return torch.nn.Sequential(torch.nn.Linear(8, 8), _ComplexLogAddExp()), torch.randn(3, 8)


def raises():
    raise ValueError("the weights file is missing")


def not_a_model():
    return 42
