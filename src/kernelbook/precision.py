"""Precision experiments that need no GPU: RMSNorm evaluated in fp16/bf16 with
and without the fp32 upcast, against float64 (chapter 08's lab).

Half-precision arithmetic is emulated exactly on the CPU: every operation on
fp16/bf16 tensors is computed in fp32 and rounded once to the tensor's dtype,
which is what IEEE arithmetic in that dtype returns for +, *, / and sqrt of two
half values. Reductions are written out as a pairwise tree so that each partial
sum is rounded too (torch's own reductions of half tensors accumulate in fp32).
"""

from __future__ import annotations

import torch

from . import reference

MODES = {
    "fp32": "upcast: squares, sum, normalization and weight in fp32, one rounding (the stage)",
    "half squares": "x*x and the normalization in the input dtype, the mean accumulated in fp32 "
                    "(what x.pow(2).mean() on a half tensor does in PyTorch)",
    "half sum": "everything in the input dtype, the row sum a pairwise tree rounded at every step "
                "(a kernel that keeps its accumulator in half)",
}


def tree_sum(v: torch.Tensor) -> torch.Tensor:
    """Sum over the last dim as a pairwise tree, every partial sum in v's dtype."""
    while v.shape[-1] > 1:
        if v.shape[-1] % 2:
            v = torch.cat([v, torch.zeros_like(v[..., :1])], dim=-1)
        v = v[..., 0::2] + v[..., 1::2]
    return v


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, mode: str) -> torch.Tensor:
    """RMSNorm of a CPU tensor in x's dtype, evaluated the way `mode` says (see MODES)."""
    n = x.shape[-1]
    if mode == "fp32":
        x32 = x.float()
        inv = torch.rsqrt(x32.square().sum(-1, keepdim=True) / n + eps)
        return (x32 * inv * weight.float()).to(x.dtype)
    squares = x * x  # rounded to x's dtype: overflows once |x| > 256 in fp16
    if mode == "half squares":
        mean = squares.float().mean(-1, keepdim=True).to(x.dtype)
    elif mode == "half sum":
        mean = tree_sum(squares) / n
    else:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    inv = torch.rsqrt(mean + torch.tensor(eps, dtype=x.dtype))
    return x * inv * weight


def error_vs_std(stds, dtype: torch.dtype, modes=tuple(MODES), rows: int = 64, cols: int = 4096,
                 eps: float = 1e-6, seed: int = 0) -> dict[str, list[float]]:
    """Max |y - y_float64| over a rows x cols input x ~ N(0, std^2) (rounded to
    `dtype`, the reference computed from the rounded values) for each std and
    mode; inf where an output is not finite."""
    gen = torch.Generator().manual_seed(seed)
    weight = (torch.rand(cols, generator=gen) + 0.5).to(dtype)
    out = {m: [] for m in modes}
    for std in stds:
        x = (torch.randn(rows, cols, generator=gen) * std).to(dtype)
        ref = reference.rms_norm(x, weight, eps)
        for m in modes:
            y = rms_norm(x, weight, eps, m).double()
            err = (y - ref).abs().max().item() if torch.isfinite(y).all() else float("inf")
            out[m].append(err)
    return out
