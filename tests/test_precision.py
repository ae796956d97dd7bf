"""Chapter 08's precision lab (CPU): RMSNorm in fp16/bf16 with and without the fp32
upcast, against float64. The numbers the chapter quotes must come out of it."""

import pytest
import torch

from kernelbook import precision

STDS = [1e-2, 0.1, 1.0, 10.0, 30.0, 70.0, 100.0, 300.0, 1e3]


def errors(dtype):
    return {m: dict(zip(STDS, v)) for m, v in precision.error_vs_std(STDS, dtype).items()}


def test_fp32_upcast_stays_accurate_at_every_scale():
    e = errors(torch.float16)["fp32"]
    assert max(e.values()) < 4e-3, e  # about half an fp16 ulp of the largest outputs
    e = errors(torch.bfloat16)["fp32"]
    assert max(e.values()) < 2e-2, e


def test_fp16_squares_overflow_past_std_70():
    e = errors(torch.float16)["half squares"]
    assert all(e[s] < 1e-2 for s in STDS if s <= 30), e
    assert all(e[s] > 1 for s in STDS if s >= 100), e  # x*x > 65,504 once |x| > 256


def test_fp16_half_accumulator_overflows_much_earlier():
    e = errors(torch.float16)["half sum"]
    assert e[1.0] < 1e-2 and e[10.0] > 1, e  # 4,096 squares of ~100 sum past 65,504


def test_bf16_has_the_range_but_not_the_bits():
    e = errors(torch.bfloat16)
    assert all(v < 0.1 for m in ("half squares", "half sum") for v in e[m].values()), e
    assert min(e["half sum"].values()) > max(e["fp32"].values()), e


def test_tree_sum_is_a_sum():
    v = torch.randn(3, 1001, dtype=torch.float64)
    torch.testing.assert_close(precision.tree_sum(v), v.sum(-1, keepdim=True))
    with pytest.raises(ValueError, match="mode"):
        precision.rms_norm(v.half(), torch.ones(1001).half(), 1e-6, "bf16 math")
