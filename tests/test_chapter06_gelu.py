"""Chapter 06 (GELU) beyond the generic stage tests: special values, in place,
and the half-precision-math trap. Skipped without a GPU."""

import math

import pytest
import torch

from kernelbook import stages
from kernelbook.build import load_stage
from kernelbook.ops import OPS

pytestmark = pytest.mark.gpu
STAGE = stages.get_stage("06")
FORMS = ["none", "tanh"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
VARIANTS = [STAGE.variant(v) for v in ("scalar", "half2", "pack")]


def op_for(form):
    return OPS["gelu" if form == "none" else "gelu_tanh"]


def extremes(dtype):
    big = [11.5, 30.0, 100.0, 1e4, 65504.0] + ([3e38] if dtype != torch.float16 else [])
    vals = big + [-v for v in big] + [math.inf, -math.inf, math.nan, 0.0, -0.0, 4.0, 4.1, -4.1, 1e-6, -1e-6]
    return torch.tensor(vals, dtype=torch.float32).to(dtype).cuda()


@pytest.fixture(scope="module")
def ops():
    return load_stage(STAGE)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", VARIANTS)
def test_extremes_finite_nan_and_infinities(ops, form, dtype, variant):
    x = extremes(dtype)
    x = torch.cat([x, torch.randn(4093, device="cuda").to(dtype) * 5])  # odd length: tails on every path
    out = ops.gelu(x, form, variant)
    op = op_for(form)
    op.check(out, op.reference({"x": x, "approximate": form}), dtype, f"{form} {dtype} v{variant}")
    finite = torch.isfinite(x)
    assert torch.isfinite(out[finite]).all(), "a finite input gave a non-finite output"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_in_place(ops, form, dtype):
    op = op_for(form)
    inputs = op.make_inputs((257, 1031), dtype, "cuda")
    expected = op.reference(inputs)
    x = inputs["x"]
    ops.gelu_out(x, form, STAGE.variant("pack"), x)  # out is x
    op.check(x, expected, dtype, "in place")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pack_launches_whole_and_ragged(ops, form, dtype):
    # Each launch of the pack variant (8-byte packs under 2^16 16-byte packs, one
    # 16-byte pack a thread to 2^17, two above, and the launch past the L2: one
    # pack a thread in blocks of 512 (an H100), or on an H200 two in blocks of 128
    # and, for fp32, one in blocks of 128) on lengths that fill its blocks exactly
    # (the WHOLE kernel: no head, tail or bounds test), one element short, and one
    # element into the buffer with a tail (head and tail peeled), out= into a
    # NaN-filled view of the same offset, so the vector body runs too.
    op = op_for(form)
    size = torch.tensor([], dtype=dtype).element_size()
    per_pack = 16 // size
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    past_l2 = (l2 // size // 4096 + 8) * 4096  # 2n bytes moved: over twice the L2, whole 8 KiB blocks
    for n in (32 * 4096, 2**16 * per_pack, 2**17 * per_pack, past_l2):
        for length, offset in ((n, 0), (n - 1, 0), (n + 3, 1)):
            x = (torch.randn(length + 1, device="cuda") * 4).to(dtype)[offset:offset + length]
            out = torch.full((length + 1,), math.nan, device="cuda", dtype=dtype)[offset:offset + length]
            ops.gelu_out(x, form, STAGE.variant("pack"), out)
            op.check(out, op.reference({"x": x, "approximate": form}), dtype,
                     f"{form} {dtype}, {length} elements, offset {offset}")


def test_half_math_overflows_where_the_fp32_math_does_not(ops):
    x = torch.randn(4096 * 4096, device="cuda").half()
    trap = ops.gelu(x, "tanh", STAGE.variant("half math"))
    good = ops.gelu(x, "tanh", STAGE.variant("pack"))
    nans = torch.isnan(trap)
    assert nans.any(), "the half-math tanh should overflow for large x"
    assert x[nans].float().min() > 3.5, "NaN only where exp(2u) overflows fp16 (x above about 4)"
    assert not torch.isnan(good).any()
    with pytest.raises(ValueError, match="variant 3"):
        ops.gelu(x.float(), "tanh", STAGE.variant("half math"))
