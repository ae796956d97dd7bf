"""The float64 references agree with torch's own implementations."""

import pytest
import torch
import torch.nn.functional as F

from kernelbook import check, reference


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (4, 4096), (2, 3, 33)])
def test_rms_norm_matches_torch(shape):
    x, w = check.random_rmsnorm_inputs(shape)
    x, w = x.double(), w.double()
    expected = F.rms_norm(x, (shape[-1],), w, 1e-6)
    torch.testing.assert_close(reference.rms_norm(x, w, 1e-6), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(1, 2), (5, 100), (3, 1025)])
def test_layer_norm_matches_torch(shape):
    x = torch.randn(shape, dtype=torch.float64) * 3 + 1
    w, b = torch.rand(shape[-1], dtype=torch.float64), torch.randn(shape[-1], dtype=torch.float64)
    expected = F.layer_norm(x, (shape[-1],), w, b, 1e-5)
    torch.testing.assert_close(reference.layer_norm(x, w, b, 1e-5), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch(approximate):
    x = torch.cat([torch.randn(10_000, dtype=torch.float64) * 4, torch.tensor([-1e4, -30.0, 0.0, 30.0, 1e4],
                                                                                dtype=torch.float64)])
    expected = F.gelu(x, approximate=approximate)
    got = reference.gelu(x, approximate)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_gelu_rejects_unknown_form():
    with pytest.raises(ValueError, match="approximate"):
        reference.gelu(torch.zeros(3), "fast")


def test_assert_close_catches_unwritten_and_wrong_values():
    ref = torch.randn(4, 8, dtype=torch.float64)
    out = ref.float().clone()
    check.assert_close(out, ref, torch.float32)
    out[2, 3] = float("nan")  # an element the kernel never wrote
    with pytest.raises(AssertionError, match="non-finite"):
        check.assert_close(out, ref, torch.float32)
    out = ref.float().clone()
    out[1, 1] += 1e-3
    with pytest.raises(AssertionError, match="exceeds"):
        check.assert_close(out, ref, torch.float32)
