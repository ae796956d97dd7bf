"""Every GPU stage, in every dtype and variant it offers, against float64 on the
op's standard shapes, random shapes, misaligned and huge tensors; bad inputs
raise before any launch. Skipped without a GPU."""

import math
import random

import pytest
import torch

from kernelbook import check, stages
from kernelbook.build import load_bench, load_stage
from kernelbook.ops import dtype_of, get_op

pytestmark = pytest.mark.gpu


def kernels():
    """(stage, op, dtype, variant) for every kernel a reader can call through the ladder."""
    out = []
    for stage in stages.cuda_stages():
        for op in stage.ops:
            for dtype in stage.dtypes:
                for _, variant in stage.contenders():
                    if stage.checked(variant):  # an unchecked kernel has its own tests (chapter 07's one-pass)
                        out.append((stage, op, dtype, variant))
    return out


KERNELS = kernels()


def kernel_id(k):
    stage, op, dtype, variant = k
    return f"{stage.folder}-{'' if op == stage.op else op + '-'}{dtype}" + ("" if variant is None else f"-v{variant}")


@pytest.fixture(scope="module", params=KERNELS, ids=kernel_id)
def kernel(request):
    stage, op, dtype, variant = request.param
    return get_op(op), load_stage(stage), dtype_of(dtype), variant


def test_standard_shapes(kernel):
    op, ops, dtype, variant = kernel
    check.verify(op, ops, None, dtype, "cuda", variant)


def test_random_shapes(kernel):
    op, ops, dtype, variant = kernel
    rng = random.Random()  # fresh shapes every run; printed on failure
    shapes = [(rng.randint(1, 300), int(math.exp(rng.uniform(0, math.log(70_000))))) for _ in range(12)]
    check.verify(op, ops, shapes, dtype, "cuda", variant)


@pytest.mark.parametrize("offset", [1, 3])
def test_misaligned_tensors(kernel, offset):
    # Contiguous views starting `offset` elements into their allocations: 16-byte loads would fault.
    op, ops, dtype, variant = kernel
    rows, cols = 33, 4099
    base = op.make_inputs((rows * cols + offset,), dtype, "cuda")["x"]
    inputs = op.make_inputs((rows, cols), dtype, "cuda")
    inputs["x"] = base[offset:].view(rows, cols)
    for key in ("weight", "bias"):
        if key in inputs:
            inputs[key] = torch.cat([inputs[key][:offset], inputs[key]])[offset:]
    obuf = torch.full((rows * cols + offset,), float("nan"), dtype=dtype, device="cuda")
    out = obuf[offset:].view(rows, cols)
    op.call_stage(ops, inputs, out, variant)
    op.check(out, op.reference(inputs), dtype, f"offset {offset}")
    assert torch.isnan(obuf[:offset]).all(), "wrote outside the output"
    # The output the op allocates starts as far past a 16-byte boundary as x, so
    # that the 16-byte paths (x and out misaligned alike) still apply.
    allocated = op.call_stage(ops, inputs, None, variant)
    assert allocated.data_ptr() % 16 == inputs["x"].data_ptr() % 16, "allocated out misaligned unlike x"
    assert allocated.is_contiguous() and allocated.shape == inputs["x"].shape
    op.check(allocated, op.reference(inputs), dtype, f"offset {offset}, allocated out")


def test_random_rows_offsets_and_outputs(kernel):
    # Drawn afresh every run: up to ~12,000 rows (the launches for many rows, not
    # only one wave) and at most 2^24 elements, rows of 1 to 70,000 elements, x,
    # weight, bias and out each starting 0 to 7 elements into its buffer (so x and
    # out may be misaligned differently), out NaN-filled with NaN guards on both
    # sides. A failure names the case.
    op, ops, dtype, variant = kernel
    rng = random.Random()

    def placed(shape, offset):  # a NaN-filled buffer and the view `offset` elements into it
        n = math.prod(shape)
        buf = torch.full((n + offset + 8,), math.nan, dtype=dtype, device="cuda")
        return buf, buf[offset:offset + n].view(shape)

    for _ in range(8):
        cols = int(math.exp(rng.uniform(0, math.log(70_000))))
        rows = max(1, min(int(math.exp(rng.uniform(0, math.log(12_000)))), 2**24 // cols))
        offsets = {key: rng.randint(0, 7) for key in ("x", "weight", "bias", "out")}
        case = f"{rows} x {cols}, offsets {offsets}"
        inputs = op.make_inputs((rows, cols), dtype, "cuda")
        for key in ("x", "weight", "bias"):
            if key in inputs:
                inputs[key] = placed(inputs[key].shape, offsets[key])[1].copy_(inputs[key])
        obuf, out = placed(inputs["x"].shape, offsets["out"])
        try:
            op.call_stage(ops, inputs, out, variant)
            torch.cuda.synchronize()
        except Exception as exc:
            raise AssertionError(f"{case}: {exc}") from exc
        op.check(out, op.reference(inputs), dtype, case)
        end = offsets["out"] + out.numel()
        assert torch.isnan(obuf[:offsets["out"]]).all() and torch.isnan(obuf[end:]).all(), f"{case}: wrote outside out"


def test_runs_on_the_current_stream(kernel):
    op, ops, dtype, variant = kernel
    inputs = op.make_inputs((64, 1024), dtype, "cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = op.call_stage(ops, inputs, None, variant)
    side.synchronize()
    op.check(out, op.reference(inputs), dtype)


def test_bad_inputs_raise_and_leave_the_context_usable(kernel):
    op, ops, dtype, variant = kernel
    for what, call in op.bad_calls(ops, "cuda").items():
        with pytest.raises((ValueError, TypeError)):
            call()
    torch.cuda.synchronize()  # a bad launch would surface here as a sticky error
    check.verify(op, ops, [(3, 100)], dtype, "cuda", variant)


@pytest.mark.parametrize("cols", [4096, 128])  # 128: short rows, several a warp (chapter 07: two a thread)
def test_past_2_to_31_elements(kernel, cols):
    op, ops, dtype, variant = kernel
    rows = (2**31) // cols + 3  # the last rows start beyond 2^31 elements
    size = torch.empty((), dtype=dtype).element_size()
    if torch.cuda.mem_get_info()[0] < 2.5 * rows * cols * size:
        pytest.skip("not enough free GPU memory for two tensors past 2^31 elements")
    inputs = op.make_inputs((rows, cols), dtype, "cuda")
    out = torch.full_like(inputs["x"], float("nan"))
    op.call_stage(ops, inputs, out, variant)
    picks = torch.tensor([0, rows // 2, (2**31) // cols - 1, (2**31) // cols, rows - 1], device="cuda")
    sub = {k: (v[picks] if k == "x" else v) for k, v in inputs.items()}
    op.check(out[picks], op.reference(sub), dtype, "rows around 2^31 elements")
    assert not torch.isnan(out).any(), "unwritten elements"
    del inputs, out
    torch.cuda.empty_cache()


def test_copy_kernel_is_exact():
    # Bytes are bytes: 16-byte packs, then the last 1-15 bytes in the same launch;
    # two packs a thread where the bytes moved fit in the L2, one above (lengths on
    # both sides of that switch).
    ops = load_bench()
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        at_l2 = l2 // 2 // dtype.itemsize  # 2 * n * itemsize bytes moved = the L2
        for n in (1, 3, 4, 5, 7, 8, 9, 15, 1023, 4096 * 33 + 3, at_l2 - 1, at_l2, at_l2 + 1, 1 << 24):
            src = torch.randn(n, device="cuda").to(dtype)
            dst = torch.full_like(src, float("nan"))
            ops.copy(src, dst)
            assert torch.equal(src, dst), (dtype, n)


def test_copy_kernel_rejects_bad_buffers_by_name():
    ops = load_bench()
    src = torch.randn(1024, device="cuda")
    with pytest.raises(ValueError, match="dst must have src's shape"):
        ops.copy(src, torch.empty(1000, device="cuda"))
    with pytest.raises(ValueError, match="16-byte aligned"):
        ops.copy(src[1:], torch.empty(1023, device="cuda"))
    with pytest.raises(ValueError, match="dst must not share memory with src"):
        ops.copy(src, src)
    with pytest.raises(TypeError, match="dst must be float32"):
        ops.copy(src, torch.empty(1024, dtype=torch.float16, device="cuda"))
