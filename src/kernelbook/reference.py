"""float64 references with explicit semantics: the ground truth for every stage.

Inputs of any float dtype are upcast to float64 first; the result is float64, so
callers compare a kernel's output against it with the tolerance for the kernel's
dtype (see kernelbook.check).
"""

from __future__ import annotations

import math

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """y = x / sqrt(mean(x^2 over the last dim) + eps) * weight."""
    x64 = x.double()
    inv_rms = torch.rsqrt(x64.square().mean(dim=-1, keepdim=True) + eps)
    return x64 * inv_rms * weight.double()


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    """y = (x - mean) / sqrt(var + eps) * weight + bias, biased variance over the last dim."""
    x64 = x.double()
    mean = x64.mean(dim=-1, keepdim=True)
    var = (x64 - mean).square().mean(dim=-1, keepdim=True)
    return (x64 - mean) * torch.rsqrt(var + eps) * weight.double() + bias.double()


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GELU: exact (erf) form, or the tanh approximation with approximate='tanh'.

    Written without cancellation so the tiny values of the negative tail are
    accurate too: x * Phi(x) = 0.5 x erfc(-x / sqrt(2)), and 0.5 (1 + tanh(u)) =
    sigmoid(2u). Special values: +inf -> +inf, -inf -> 0, NaN -> NaN.
    """
    x64 = x.double()
    if approximate == "none":
        y = 0.5 * x64 * torch.special.erfc(-x64 / math.sqrt(2.0))
    elif approximate == "tanh":
        u = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64.pow(3))
        y = x64 * torch.sigmoid(2.0 * u)
    else:
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return torch.where(x64 == -math.inf, torch.zeros_like(y), y)
