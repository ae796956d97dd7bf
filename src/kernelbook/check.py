"""Correctness checks: tolerances per dtype, NaN-poisoned outputs, the standard shapes."""

from __future__ import annotations

from dataclasses import dataclass

import torch


# |out - ref| <= atol + rtol * |ref|, elementwise, against the float64 reference.
# fp32: outputs are rounded once (6e-8 relative); the fp32 sums add a few 1e-7 and
# rsqrtf 2 ulp; a sequential CPU sum over 65k values stays under 1e-5.
TOLERANCES = {
    torch.float32: (1e-5, 2e-5),
    torch.float16: (1e-3, 2e-3),
    torch.bfloat16: (8e-3, 1.6e-2),
}

# Row counts 0, 1 and > 65,535 (the grid's y/z limit); row lengths of 1, odd
# sizes, powers of two and their neighbours, rows longer than any register or
# shared-memory cache; one 3-D input.
STANDARD_SHAPES = [
    (0, 128), (128, 0), (1, 1), (1, 2), (3, 3), (2, 5), (4, 31), (3, 33), (5, 127),
    (2, 1000), (7, 1024), (3, 1025), (2, 4096), (2, 4099), (3, 8192), (1, 12289),
    (2, 16384), (1, 16387), (1, 30000), (1, 32768), (1, 40000), (1, 65537), (70000, 8), (2, 3, 100),
]

EPS = 1e-6


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    if dtype not in TOLERANCES:
        raise ValueError(f"no tolerance defined for {dtype}")
    return TOLERANCES[dtype]


def random_rmsnorm_inputs(shape, dtype=torch.float32, device="cpu", generator=None):
    """Fresh inputs: x ~ N(0, s^2) with a per-row scale s in [0.1, 10] and a small
    offset, weight ~ U(0.5, 1.5). Never zeros: zeros hide unwritten outputs."""
    shape = tuple(shape)
    x = torch.randn(shape, dtype=torch.float32, device=device, generator=generator)
    if x.numel():
        rows_shape = shape[:-1] + (1,)
        scale = 10 ** (torch.rand(rows_shape, device=device, generator=generator) * 2 - 1)
        x = x * scale + 0.1 * scale
    weight = torch.rand(shape[-1], dtype=torch.float32, device=device, generator=generator) + 0.5
    return x.to(dtype), weight.to(dtype)


def poisoned_like(t: torch.Tensor) -> torch.Tensor:
    """An output buffer full of NaN: any element the kernel does not write fails."""
    return torch.full_like(t, float("nan"), memory_format=torch.contiguous_format)


@dataclass
class CheckResult:
    shape: tuple
    max_abs_err: float
    max_rel_err: float  # max |out - ref| / max |ref|, the norm-style summary

    def row(self) -> str:
        return f"{str(self.shape):>16}  max|err| {self.max_abs_err:.2e}  rel {self.max_rel_err:.2e}"


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str = "output",
                 tol: tuple[float, float] | None = None) -> CheckResult:
    """Raise AssertionError unless every element is finite and within tolerance
    (`tol` = (atol, rtol), by default the dtype's entry in TOLERANCES)."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.numel() == 0:
        return CheckResult(tuple(out.shape), 0.0, 0.0)
    out64 = out.double()
    ref64 = ref.to(out64.device)
    bad = ~torch.isfinite(out64)
    if bad.any():
        idx = bad.nonzero()[0].tolist()
        raise AssertionError(f"{what}: {int(bad.sum())} non-finite values (unwritten or overflowed), "
                             f"first at {idx} of shape {tuple(out.shape)}")
    atol, rtol = tol or tolerance(dtype)
    err = (out64 - ref64).abs()
    limit = atol + rtol * ref64.abs()
    if (err > limit).any():
        idx = (err - limit).argmax()
        pos = list(torch.unravel_index(idx, out.shape))
        raise AssertionError(f"{what}: max |err| {err.max().item():.3e} exceeds atol {atol} + rtol {rtol}*|ref| "
                             f"at {[int(p) for p in pos]} (out {out64.flatten()[idx].item():.6g}, "
                             f"ref {ref64.flatten()[idx].item():.6g}), shape {tuple(out.shape)}")
    scale = ref64.abs().max().item() or 1.0
    return CheckResult(tuple(out.shape), err.max().item(), err.max().item() / scale)


# Mantissa bits and the smallest subnormal of each dtype: one ulp at |v| is
# 2^(exponent(v) - bits), never less than the smallest subnormal.
_ULP = {torch.float32: (23, 2.0**-149), torch.float16: (10, 2.0**-24), torch.bfloat16: (7, 2.0**-133)}


def ulp(ref: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` values at each |ref| (float64 in, float64 out)."""
    bits, tiny = _ULP[dtype]
    _, exponent = torch.frexp(ref.abs())  # |ref| = m * 2^exponent, m in [0.5, 1)
    return torch.clamp(torch.ldexp(torch.ones_like(ref), exponent - 1 - bits), min=tiny)


def assert_within_ulps(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, ulps: float,
                       what: str = "output", rtol: float = 0.0) -> CheckResult:
    """Every element within `ulps` units in the last place of `dtype` from the float64
    reference (or, where `rtol` is given, within rtol * |ref|); NaN exactly where the
    reference is NaN, infinities equal."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.numel() == 0:
        return CheckResult(tuple(out.shape), 0.0, 0.0)
    out64, ref64 = out.double().flatten(), ref.to(out.device).flatten()
    nan_ref, nan_out = torch.isnan(ref64), torch.isnan(out64)
    if (nan_ref != nan_out).any():
        i = int((nan_ref != nan_out).nonzero()[0])
        raise AssertionError(f"{what}: NaN mismatch at flat index {i} (out {out64[i].item()}, ref {ref64[i].item()}); "
                             f"{int((nan_out & ~nan_ref).sum())} NaN where the reference is a number")
    keep = ~nan_ref
    o, r = out64[keep], ref64[keep]
    inf = torch.isinf(r) | torch.isinf(o)
    if (o[inf] != r[inf]).any():
        i = int((o[inf] != r[inf]).nonzero()[0])
        raise AssertionError(f"{what}: infinity mismatch (out {o[inf][i].item()}, ref {r[inf][i].item()})")
    o, r = o[~inf], r[~inf]
    err = (o - r).abs()
    in_ulps = err / ulp(r, dtype)
    in_ulps = torch.where(err <= rtol * r.abs(), torch.zeros_like(in_ulps), in_ulps)
    if in_ulps.numel() and in_ulps.max() > ulps:
        i = int(in_ulps.argmax())
        raise AssertionError(f"{what}: {in_ulps.max().item():.2f} ulp from float64 (limit {ulps}) at out "
                             f"{o[i].item():.9g}, ref {r[i].item():.9g}; {int((in_ulps > ulps).sum())} elements over")
    scale = r.abs().max().item() if r.numel() else 1.0
    return CheckResult(tuple(out.shape), err.max().item() if err.numel() else 0.0,
                       (err.max().item() / scale) if err.numel() and scale else 0.0)


def verify(op, ops, shapes=None, dtype=torch.float32, device="cuda", variant=None) -> list[CheckResult]:
    """Run a stage on fresh random inputs into NaN-poisoned outputs (or through its
    allocating form where it has no `out` form) and judge every shape against
    `op`'s float64 reference with `op`'s rule for `dtype`."""
    results = []
    for shape in shapes if shapes is not None else op.standard_shapes:
        inputs = op.make_inputs(shape, dtype, device)
        has_out = hasattr(ops, op.out_op)  # chapter 01's CPU loops only return fresh tensors
        out = op.call_stage(ops, inputs, poisoned_like(inputs["x"]) if has_out else None, variant)
        results.append(op.check(out, op.reference(inputs), dtype, f"{op.name} {str(dtype).removeprefix('torch.')} {tuple(shape)}"))
    return results


def verify_rms_norm(ops, shapes=STANDARD_SHAPES, device="cuda", dtype=torch.float32) -> list[CheckResult]:
    """verify() for RMSNorm (the chapters 01-05 notebooks call this)."""
    from .ops import OPS

    return verify(OPS["rmsnorm"], ops, shapes, dtype, device)
