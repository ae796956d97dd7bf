"""Chapter 01 (C++ loops, built with torch's builder) against float64, and its input checks."""

import pytest
import torch

from kernelbook import check, reference
from kernelbook.build import load_stage


@pytest.fixture(scope="module")
def ch01():
    return load_stage("01")


def test_rms_norm_standard_shapes(ch01):
    results = check.verify_rms_norm(ch01, check.STANDARD_SHAPES, device="cpu")
    assert len(results) == len(check.STANDARD_SHAPES)


def test_layer_norm(ch01):
    for shape in [(1, 1), (3, 5), (7, 1000), (2, 4097)]:
        x = torch.randn(shape) * 2 + 3
        w, b = torch.rand(shape[-1]) + 0.5, torch.randn(shape[-1])
        check.assert_close(ch01.layer_norm(x, w, b, 1e-5), reference.layer_norm(x, w, b, 1e-5), torch.float32)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_finite_and_accurate_at_extremes(ch01, approximate):
    x = torch.cat([torch.randn(5000) * 5, torch.tensor([-1e4, -100.0, -10.0, 0.0, 10.0, 100.0, 1e4])])
    check.assert_close(ch01.gelu(x, approximate), reference.gelu(x, approximate), torch.float32)


def test_fp32_accumulation_error_grows_with_row_length(ch01):
    # The notebook's claim: a sequential fp32 sum loses accuracy as rows grow.
    errors = []
    for cols in (256, 1 << 20):
        x = torch.rand(1, cols) + 1.0  # all positive: the rounding errors do not cancel
        w = torch.ones(cols)
        y = ch01.rms_norm(x, w, 1e-6).double()
        errors.append(((y - reference.rms_norm(x, w, 1e-6)).abs().max()).item())
    assert errors[1] > 10 * errors[0], errors


BAD_INPUTS = [
    ("float32", lambda x, w: (x.double(), w)),
    ("float32", lambda x, w: (x, w.half())),
    ("shape", lambda x, w: (x, w[:-1])),
    ("shape", lambda x, w: (x, w.reshape(1, -1))),
    ("contiguous", lambda x, w: (x.t(), w[: x.shape[0]].contiguous())),
    ("scalar", lambda x, w: (x[0, 0], w)),
]


@pytest.mark.parametrize("message, corrupt", BAD_INPUTS)
def test_bad_inputs_raise_clear_errors(ch01, message, corrupt):
    x, w = check.random_rmsnorm_inputs((6, 6))
    bx, bw = corrupt(x, w)
    with pytest.raises((ValueError, TypeError), match=message):
        ch01.rms_norm(bx, bw, 1e-6)


@pytest.mark.parametrize("eps", [0.0, -1e-6, float("nan"), float("inf")])
def test_bad_eps_raises(ch01, eps):
    x, w = check.random_rmsnorm_inputs((2, 8))
    with pytest.raises(ValueError, match="eps"):
        ch01.rms_norm(x, w, eps)
