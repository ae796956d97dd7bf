"""GPU stages against float64 on the standard shapes, random shapes, misaligned and
huge tensors; bad inputs raise before any launch. Skipped without a GPU."""

import math
import random

import pytest
import torch

from kernelbook import bench, check, reference, stages
from kernelbook.build import load_copy, load_stage

pytestmark = pytest.mark.gpu
CUDA_STAGES = stages.cuda_stages()
EPS = check.EPS


@pytest.fixture(scope="module", params=CUDA_STAGES, ids=lambda s: s.folder)
def ops(request):
    return load_stage(request.param)


def test_standard_shapes(ops):
    check.verify_rms_norm(ops, check.STANDARD_SHAPES, device="cuda")


def test_random_shapes_and_scales(ops):
    rng = random.Random()  # fresh shapes every run; printed on failure
    shapes = [(rng.randint(1, 300), int(math.exp(rng.uniform(0, math.log(70_000))))) for _ in range(12)]
    for shape in shapes:
        check.verify_rms_norm(ops, [shape], device="cuda")


def test_large_and_tiny_magnitudes(ops):
    # fp32 accumulation: rows of 1e15 (squares near 1e32, sums far below FLT_MAX)
    # and 1e-15 (squares near 1e-30, still normal floats) keep full accuracy.
    # Past |x| ~ 1e17 the fp32 sum of squares overflows, as torch's fp32 RMSNorm does.
    for scale, eps in ((1e15, EPS), (1e-15, 1e-36)):
        x, w = check.random_rmsnorm_inputs((4, 4096), device="cuda")
        x = x * scale
        check.assert_close(ops.rms_norm(x, w, eps), reference.rms_norm(x, w, eps), torch.float32, f"scale {scale}")


def test_misaligned_tensors(ops):
    # A contiguous view starting 4 bytes into an allocation: float4 loads would fault.
    rows, cols = 33, 4096
    buf = torch.randn(rows * cols + 1, device="cuda")
    x = buf[1:].view(rows, cols)
    wbuf = torch.rand(cols + 1, device="cuda") + 0.5
    w = wbuf[1:]
    obuf = torch.full((rows * cols + 1,), float("nan"), device="cuda")
    out = obuf[1:].view(rows, cols)
    ops.rms_norm_out(x, w, EPS, out)
    check.assert_close(out, reference.rms_norm(x, w, EPS), torch.float32)
    assert torch.isnan(obuf[0]), "wrote outside the output"


def test_runs_on_the_current_stream(ops):
    x, w = check.random_rmsnorm_inputs((64, 1024), device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        out = ops.rms_norm(x, w, EPS)
    side.synchronize()
    check.assert_close(out, reference.rms_norm(x, w, EPS), torch.float32)


def bad_cases():
    good = lambda: check.random_rmsnorm_inputs((8, 64), device="cuda")  # noqa: E731
    x, w = good()
    return [
        ("CUDA tensor", (x.cpu(), w.cpu()), {}),
        ("same device", (x, w.cpu()), {}),
        ("float32", (x.double(), w), {}),
        ("float32", (x.half(), w), {}),
        ("float32", (x, w.half()), {}),
        ("shape", (x, w[:-1]), {}),
        ("shape", (x, torch.rand(65, device="cuda")), {}),
        ("contiguous", (x.t(), torch.rand(8, device="cuda")), {}),
        ("contiguous", (x[:, ::2], w[::2]), {}),
        ("contiguous", (x, torch.rand(128, device="cuda")[::2]), {}),
        ("scalar", (x[0, 0], w), {}),
        ("eps", (x, w), {"eps": 0.0}),
        ("eps", (x, w), {"eps": float("nan")}),
        ("share memory", (x, w), {"out": x}),
        ("shape", (x, w), {"out": torch.empty(8, 32, device="cuda")}),
        ("float32", (x, w), {"out": torch.empty(8, 64, device="cuda", dtype=torch.half)}),
    ]


def test_bad_inputs_raise_and_leave_the_context_usable(ops):
    for message, args, kw in bad_cases():
        eps = kw.get("eps", EPS)
        with pytest.raises((ValueError, TypeError), match=message):
            if "out" in kw:
                ops.rms_norm_out(*args, eps, kw["out"])
            else:
                ops.rms_norm(*args, eps)
    torch.cuda.synchronize()  # a bad launch would surface here as a sticky error
    check.verify_rms_norm(ops, [(3, 100)], device="cuda")


def test_past_2_to_31_elements():
    cols = 4096
    rows = (2**31) // cols + 3  # the last rows start beyond 2^31 elements
    if torch.cuda.get_device_properties(0).total_memory < 3 * rows * cols * 4:
        pytest.skip("not enough GPU memory for two 8 GiB tensors")
    x = torch.randn(rows, cols, device="cuda")
    w = torch.rand(cols, device="cuda") + 0.5
    out = torch.empty_like(x)
    check_rows = torch.tensor([0, rows // 2, (2**31) // cols - 1, (2**31) // cols, rows - 1], device="cuda")
    for stage in CUDA_STAGES:
        out.fill_(float("nan"))
        load_stage(stage).rms_norm_out(x, w, EPS, out)
        got = out[check_rows]
        check.assert_close(got, reference.rms_norm(x[check_rows], w, EPS), torch.float32, stage.label)
        assert not torch.isnan(out).any(), f"{stage.label}: unwritten elements"


def test_copy_kernel_is_exact():
    ops = load_copy()
    for n in (1, 3, 4, 5, 1023, 4096 * 33 + 3, 1 << 24):
        src = torch.randn(n, device="cuda")
        dst = torch.full_like(src, float("nan"))
        ops.copy(src, dst)
        assert torch.equal(src, dst), n


def test_copy_kernel_keeps_up_with_torch_copy():
    ours, theirs = bench.copy_speed_of_light(2**30, reps=50)
    print(f"\ncopy 1 GiB: ours {ours.gbps:.0f} GB/s, torch copy_ {theirs.gbps:.0f} GB/s")
    assert ours.ms <= theirs.ms, (ours, theirs)


def test_copy_kernel_rejects_bad_buffers_by_name():
    ops = load_copy()
    src = torch.randn(1024, device="cuda")
    with pytest.raises(ValueError, match="dst must have src's shape"):
        ops.copy(src, torch.empty(1000, device="cuda"))
    with pytest.raises(ValueError, match="16-byte aligned"):
        ops.copy(src[1:], torch.empty(1023, device="cuda"))
    with pytest.raises(ValueError, match="dst must not share memory with src"):
        ops.copy(src, src)
