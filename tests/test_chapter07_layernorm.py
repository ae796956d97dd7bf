"""Chapter 07 (Welford LayerNorm) beyond the generic stage tests: large offsets,
constant rows, NaN rows, optional weight and bias, and the one-pass formula
failing where the chapter says it fails. Skipped without a GPU."""

import math
import random

import pytest
import torch

from kernelbook import bench, check, reference, stages
from kernelbook.build import load_stage
from kernelbook.ops import OPS

pytestmark = pytest.mark.gpu
STAGE = stages.get_stage("07")
OP = OPS["layernorm"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
STABLE = [STAGE.variant("welford"), STAGE.variant("two-pass")]


@pytest.fixture(scope="module")
def ops():
    return load_stage(STAGE)


def run(ops, x, w, b, method):
    return ops.layer_norm(x, w, b, OP.eps, method)


def spread_rows(rows, cols, dtype, method):
    """rows x cols of N(0, 9) values, offset by 5 for the stable methods and each row
    centered for the one-pass one: a short uncentered row can sit far from zero
    against its own spread (four values near 2.4), and the one-pass formula then
    cancels even without an offset."""
    x = torch.randn(rows, cols, device="cuda") * 3
    x = x - x.mean(dim=1, keepdim=True) if method == STAGE.variant("one-pass") else x + 5.0
    return x.to(dtype)


def nan_view(like, start):
    """A NaN-filled buffer with room for `like` `start` elements into it and 8 more
    elements after it, and the view of it there (shape, dtype and device of `like`)."""
    buf = torch.full((like.numel() + start + 8,), math.nan, device=like.device, dtype=like.dtype)
    return buf, buf[start:start + like.numel()].view(like.shape)


def placed(values, start):
    """nan_view's buffer and view, with `values` copied into the view."""
    buf, view = nan_view(values, start)
    return buf, view.copy_(values)


def check_weight_and_bias_cases(ops, x, method, label, out_start=0, nan_row=None, w_start=None, b_start=None,
                                const_row=None):
    """x's rows normalized into a NaN-filled out with weight and bias both, each
    alone, and neither, each against the float64 reference; nothing written around
    out. out_start: out is a view that many elements into its buffer. nan_row: a row
    of x holding a NaN, which must come out all NaN, the other rows untouched.
    w_start, b_start: weight, bias is a view that many elements into its buffer.
    const_row: a constant row of x, whose output must be the bias exactly."""
    rows, cols = x.shape
    dtype = x.dtype

    def at_start(t, start):
        return t if start is None else placed(t, start)[1]

    w = at_start((torch.rand(cols, device=x.device) + 0.5).to(dtype), w_start)
    b = at_start(torch.randn(cols, device=x.device).to(dtype), b_start)
    ones, zeros = torch.ones_like(w), torch.zeros_like(b)
    obuf, out = nan_view(x, out_start)
    keep = torch.ones(rows, dtype=torch.bool, device=x.device)  # a mask: rows can number millions
    if nan_row is not None:
        keep[nan_row] = False
    for wt, bt, rw, rb in ((w, b, w, b), (w, None, w, zeros), (None, b, ones, b), (None, None, ones, zeros)):
        what = f"{label}, weight {wt is not None}, bias {bt is not None}"
        out.fill_(float("nan"))
        ops.layer_norm_out(x, wt, bt, OP.eps, method, out)
        assert obuf[:out_start].isnan().all() and obuf[out_start + out.numel():].isnan().all(), \
            f"{what}: wrote outside out"
        if nan_row is not None:
            assert out[nan_row].isnan().all(), f"{what}: the NaN row"
        if const_row is not None and const_row != nan_row:
            assert torch.equal(out[const_row], rb), f"{what}: the constant row"
        OP.check(out[keep], reference.layer_norm(x[keep], rw, rb, OP.eps), dtype, what)


def check_rows_past_the_l2(ops, cols, dtype, method):
    """Rows of cols that move just more than the L2 holds (a partial last wave), one
    of them holding a NaN, through check_weight_and_bias_cases."""
    rows = bench.l2_bytes() // (2 * dtype.itemsize * cols) + 3
    x = spread_rows(rows, cols, dtype, method)
    x[rows // 3, cols // 2] = float("nan")
    check_weight_and_bias_cases(ops, x, method, f"{rows} x {cols}", nan_row=rows // 3)


@pytest.mark.parametrize("method", STABLE)
@pytest.mark.parametrize("offset", [0.0, 1e2, 1e3, 1e4])
@pytest.mark.parametrize("cols", [1, 7, 128, 769, 4096, 65536])
def test_offset_rows_fp32(ops, method, offset, cols):
    # fp32 can hold the mean only to half an ulp of the offset, and every x - mean
    # inherits that error (times rstd ~ 1 and |w| <= 1.5): allow 4 ulp of the offset,
    # and require at least torch's own fp32 accuracy on the same rows.
    x = torch.randn(16, cols, device="cuda") + offset
    w, b = torch.rand(cols, device="cuda") + 0.5, torch.randn(cols, device="cuda")
    ref = reference.layer_norm(x, w, b, OP.eps)
    out = run(ops, x, w, b, method)
    torch_err = (torch.nn.functional.layer_norm(x, (cols,), w, b, OP.eps).double() - ref).abs().max().item()
    check.assert_close(out, ref, torch.float32, f"offset {offset}", (1e-5 + 4 * 1.5 * 2**-23 * offset, 2e-5))
    err = (out.double() - ref).abs().max().item()
    assert err <= max(2 * torch_err, 2e-5), f"error {err:.2e}, torch's {torch_err:.2e}"


@pytest.mark.parametrize("method", STABLE)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_constant_and_near_constant_rows(ops, method, dtype):
    cols = 4096
    rows = torch.stack([torch.full((cols,), 1234.0), (40000 + torch.arange(cols) % 4).float(),
                        torch.zeros(cols), torch.full((cols,), -3.5)]).to(dtype).cuda()
    w, b = (torch.rand(cols, device="cuda") + 0.5).to(dtype), torch.randn(cols, device="cuda").to(dtype)
    out = run(ops, rows, w, b, method)
    assert torch.isfinite(out).all()
    for r in (0, 2, 3):  # constant: (x - mean) is exactly 0, so the output is the bias
        assert torch.equal(out[r], b), r
    OP.check(out, reference.layer_norm(rows, w, b, OP.eps), dtype, "near-constant rows")


def test_one_pass_fails_where_the_chapter_says(ops):
    x = torch.randn(64, 4096, device="cuda") + 1e4
    w, b = torch.ones(4096, device="cuda"), torch.zeros(4096, device="cuda")
    ref = reference.layer_norm(x, w, b, OP.eps)
    err = (run(ops, x, w, b, STAGE.variant("one-pass")).double() - ref).abs().nan_to_num(float("inf")).max()
    assert err > 0.1, f"one-pass E[x^2]-E[x]^2 at offset 1e4 should fail, max error {err}"
    good = (run(ops, x, w, b, STAGE.variant("welford")).double() - ref).abs().max()
    assert good < 1e-3


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nan_row_leaves_other_rows_untouched(ops, dtype):
    x = torch.randn(5, 1000, device="cuda").to(dtype)
    x[2, 17] = float("nan")
    x[3, 5] = float("inf")
    w, b = (torch.rand(1000, device="cuda") + 0.5).to(dtype), torch.randn(1000, device="cuda").to(dtype)
    out = ops.layer_norm(x, w, b, OP.eps, 0)
    keep = [0, 1, 4]
    OP.check(out[keep], reference.layer_norm(x[keep], w, b, OP.eps), dtype, "other rows")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_weight_and_bias_optional(ops, dtype):
    x = torch.randn(7, 333, device="cuda").to(dtype)
    w, b = (torch.rand(333, device="cuda") + 0.5).to(dtype), torch.randn(333, device="cuda").to(dtype)
    ones, zeros = torch.ones_like(w), torch.zeros_like(b)
    for wt, bt, rw, rb in ((None, None, ones, zeros), (w, None, w, zeros), (None, b, ones, b)):
        OP.check(ops.layer_norm(x, wt, bt, OP.eps, 0), reference.layer_norm(x, rw, rb, OP.eps), dtype,
                 f"weight {wt is not None}, bias {bt is not None}")
    one = torch.randn(9, 1, device="cuda").to(dtype)
    assert torch.equal(ops.layer_norm(one, None, b[:1], OP.eps, 0), b[:1].expand(9, 1))  # a row of one: the bias


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cols", [1000, 4096, 4099])
def test_one_pass_is_right_where_nothing_cancels(ops, dtype, cols):
    # The shortcut is a real kernel, wrong only where the chapter says: on rows whose
    # mean is small against their spread it meets the op's tolerance like the others.
    x = torch.randn(64, cols, device="cuda").to(dtype)
    w, b = (torch.rand(cols, device="cuda") + 0.5).to(dtype), torch.randn(cols, device="cuda").to(dtype)
    out = run(ops, x, w, b, STAGE.variant("one-pass"))
    OP.check(out, reference.layer_norm(x, w, b, OP.eps), dtype, "one-pass, zero-mean rows")


@pytest.mark.parametrize("method", STABLE)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cols", [128, 256, 512, 1024])
def test_short_power_of_two_rows_with_partial_warps(ops, method, dtype, cols):
    # These lengths take the short-row kernels without per-slot tests, where a group
    # of lanes past the last row still loads (from row 0) and computes. Row counts
    # that leave warps and blocks part full; weight and bias present and absent.
    for rows in (1, 3, 37):
        x = (torch.randn(rows, cols, device="cuda") * 3 + 5).to(dtype)
        w, b = (torch.rand(cols, device="cuda") + 0.5).to(dtype), torch.randn(cols, device="cuda").to(dtype)
        y = ops.layer_norm(x, w, b, OP.eps, method)
        OP.check(y, reference.layer_norm(x, w, b, OP.eps), dtype, f"{rows} x {cols}")
        plain = ops.layer_norm(x, None, None, OP.eps, method)
        OP.check(plain, reference.layer_norm(x, torch.ones_like(w), torch.zeros_like(b), OP.eps), dtype,
                 f"{rows} x {cols}, no weight or bias")


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_many_rows_of_a_few_vectors(ops, method, dtype):
    # More than 256 aligned rows of 1 to 4 vectors: one or two lanes a row. Row counts
    # that leave the last warp and block part full; 4 columns is one fp32 vector and an
    # unaligned 16-bit row; weight and bias both, one, or none; out filled with NaN.
    for cols in (4, 8, 12, 16, 24, 32):
        for rows in (257, 4099):
            check_weight_and_bias_cases(ops, spread_rows(rows, cols, dtype, method), method, f"{rows} x {cols}")


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_many_rows_with_weight_and_bias_loaded_early(ops, method, dtype):
    # More than 256 aligned rows with weight and bias take, at some lengths, kernels
    # that load those with x (affine_row): 16-bit rows of 128, 256, 512 halves
    # (groups of 16 or 32 lanes, no grid loop; at 128 each thread holds two rows, so
    # the NaN row shares its threads with a clean one), 1,024, 2,048 and 16,384 halves,
    # and fp32 rows of 1,024, 8,192 and 16,384 floats (a block a row); 128 floats
    # (two rows a thread; groups past the last row rewrite it); 4,096
    # of either on a GPU whose memory is faster per SM (an H200), where 16,384 floats load
    # weight and bias after the reduction instead (WbLoad::kLate); 16-bit rows of
    # 16,384 load them after it on every GPU, in program order (kInOrder). Row
    # counts that leave the last block part full, lengths around them (other
    # kernels), a NaN row; weight and bias both, one, or none; out filled with NaN.
    for cols, counts in (((64, 128, 136, 256, 512, 1024, 2048), (257, 4099, 70001)),
                         ((4096, 8192, 16384), (257, 1001))):
        for c in cols:
            for rows in counts:
                x = spread_rows(rows, c, dtype, method)
                x[rows // 3, c // 2] = float("nan")
                check_weight_and_bias_cases(ops, x, method, f"{rows} x {c}", nan_row=rows // 3)


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_moving_more_than_the_l2(ops, method, dtype):
    # The row counts above move less than the L2. Past it, 16-bit rows of 8,192
    # (256 x 4 instead of the general kernels) and 16,384 load x with an L2
    # evict_last policy (moves_past_l2); on a GPU whose memory is faster per SM (an
    # H200) so do fp32 rows of 4,096, 8,192 and 16,384 floats (keep_x_in_l2), 4,096
    # floats as 128 x 8 with weight and bias read after the reduction; elsewhere
    # they take the kernels above. Rows just past the L2 (a partial last wave), a
    # NaN row, weight and bias both, one, or none.
    for cols in (4096, 8192, 16384) if dtype == torch.float32 else (8192, 16384):
        check_rows_past_the_l2(ops, cols, dtype, method)


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_between_the_powers_of_two_past_the_l2(ops, method, dtype):
    # Past the L2, aligned rows of 129 to 2,047 16-bit vectors or 4,095 fp32 ones that
    # are not a power of two take, for Welford, a block kernel shaped to the row
    # (launch_shaped): 64 to 512 threads x 3 to 8 vectors, the last slot of some
    # threads past the row's end unless the row fills them (the other methods, the
    # general kernels). On a GPU like the H200 some take the kernels of rows off the
    # boundary instead: 16-bit rows of 129 to 160 vectors a warp a row (129, 152, 160;
    # the offset kernel with weight and bias both given, to 168 vectors: 163; else the
    # shifted kernel to fp16 152 and bf16 160), from 513 in blocks of 128 and 256 the
    # offset kernel with weight and bias both given (640, 1250, 1600, 1792, 2047; from
    # 1600, 256 x 7 and 8 at 1,024 threads an SM), and so do bf16 rows of 169 to 255
    # vectors but 192, at 64 x 3 and 64 x 4 (225), fp32 rows of 2,049 to 3,072 the funnel
    # kernel (2049, 2500; at 512 x 6 two slots' weight and bias at a time: 2750, 3072).
    # Lengths at each block size, filling it and not; a NaN row; weight and bias both,
    # one, or none.
    vec = 16 // dtype.itemsize
    lengths = ((129, 152, 160, 163, 192, 225, 384, 447, 640, 1250, 1600, 1792, 2047) if vec == 8 else
               (129, 192, 384, 500, 513, 640, 1250, 2049, 2500, 2750, 3072, 3584, 4095))
    for nvec in lengths:
        check_rows_past_the_l2(ops, nvec * vec, dtype, method)


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_off_the_vector_boundary_past_the_l2(ops, method, dtype):
    # Past the L2, rows of 128 to 2,048 16-bit or 129 to 4,096 fp32 vectors whose
    # starts are not all on a 16-byte boundary (a length not a multiple of the vector,
    # or x and out views one element in) take, for Welford:
    # - 16-bit: layernorm_shifted_wb_kernel (blocks per row class, weight and bias
    #   shifted into shared memory; a warp a row up to 256 vectors, 4 to 8 a lane at
    #   1,025 to 2,047 halves; from 1,793 vectors 256 x 8 on a GPU like the H200, else
    #   512 x 4). On a GPU like the H200, rows in blocks of 128 and 256 threads with
    #   weight and bias both given take layernorm_offset_wb_kernel instead (a warp a
    #   row at 1,032 to 1,415 halves whose heads are all even: 1,034, 1,100, 1,290,
    #   1,300; 1,301 to 2,055 halves in blocks of 64, 3,001 and 3,079 as 128 x 3,
    #   3,100, 6,001, 6,500, 8,191, 12,289, 13,001, 14,501, 16,383 and 16,385 halves,
    #   and 6,153 and 7,169 (128 x 7: bf16 rows, and fp16 rows whose heads are not all
    #   even, load each slot's bias at that slot); 1,025 and 1,031 stay shifted; rows
    #   of 257 to 320 vectors whose heads are not all even take it with their heads
    #   paired, 4 branches: 2,059, 2,567); at 3 (1,301, 1,534, 1,537, 3,001, 3,079), 4 (1,700 to 2,055, 3,100,
    #   8,191), 5 in blocks of 64 (rows of 257 to 320 vectors whose heads are all even:
    #   2,058, 2,500, 2,566) and 6 (1,290 and 1,300 a warp a row, 6,001, 12,289) vectors
    #   a thread it takes weight and bias from the next lane; at 256 x 7 (13,001) and 256 x 8 (14,501,
    #   16,383, 16,385) 1,024 threads an SM.
    # - fp32: layernorm_funnel_wb_kernel (a row a block, weight and bias moved out of
    #   two aligned vectors; 961 to 1,024 vectors, 3,901 and 4,097 floats, at 256 x 4
    #   on a GPU like the H200, else 128 x 8; there, with weight and bias both given,
    #   blocks of 256 and 512 threads but 512 x 8 load them two slots at a time, at 4
    #   to 7 vectors a thread: 4,097, 7,001, 8,191, 10,001, 12,289, 14,001).
    # On an H100 neither at a power of two vectors (1,025 and 1,031 halves take the
    # peeled general kernels there); the other methods take the peeled general
    # kernels. Lengths at each block size; a NaN row; weight and bias both, one, or
    # none; the views at 500 vectors, on the new kernels on every GPU.
    vec = 16 // dtype.itemsize
    lengths = ((1025, 1031, 1034, 1100, 1290, 1300, 1301, 1534, 1537, 1700, 2047, 2055, 2058, 2059, 2500, 2566, 2567,
                3001, 3079, 3100, 6001, 6153, 6500, 7169, 8191, 12289, 13001, 14501, 16383, 16385)
               if vec == 8 else
               (1025, 1537, 1541, 3901, 4097, 7001, 8191, 10001, 12289, 14001, 16383, 16387))
    for cols in lengths:
        check_rows_past_the_l2(ops, cols, dtype, method)
    cols = 500 * vec
    rows = bench.l2_bytes() // (2 * dtype.itemsize * cols) + 3
    x = placed(spread_rows(rows, cols, dtype, method), 1)[1]
    check_weight_and_bias_cases(ops, x, method, f"{rows} x {cols}, one element in", out_start=1)
    # Weight and bias one element into their buffers, so not on a 16-byte boundary:
    # the kernels that read them in aligned pieces (layernorm_offset_wb_kernel,
    # layernorm_funnel_wb_kernel) must leave such a launch to the others.
    cols = 513 * vec + 1
    rows = bench.l2_bytes() // (2 * dtype.itemsize * cols) + 3
    check_weight_and_bias_cases(ops, spread_rows(rows, cols, dtype, method), method,
                                f"{rows} x {cols}, weight and bias one element in", w_start=1, b_start=1)


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_few_rows_one_block_each(ops, method, dtype):
    # At most 256 aligned rows of 9 to 2,048 vectors: one block a row (32 to 1,024
    # threads), weight and bias loaded with the row. Lengths that fill every
    # thread's slots (the EVEN kernels: 32, 64, 128, 256, 512, 1,024 and 2,048
    # vectors) and lengths that leave some empty; weight and bias both, one, or
    # none; out filled with NaN; with 37 rows, row 5 holds a NaN.
    vec = 16 // dtype.itemsize
    for nvec in (9, 32, 33, 64, 100, 128, 200, 256, 512, 700, 1024, 1500, 2048):
        cols = nvec * vec
        for rows in (1, 37, 256):
            x = spread_rows(rows, cols, dtype, method)
            nan_row = 5 if rows == 37 else None
            if nan_row is not None:
                x[nan_row, cols // 2] = float("nan")
            check_weight_and_bias_cases(ops, x, method, f"{rows} x {cols}", nan_row=nan_row)


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_many_rows_two_per_block(ops, method, dtype):
    # At least 2,048 rows of 257 to 2,048 aligned vectors go two rows to a block
    # (fp32 rows of more than 1,024 vectors: a row per block, three blocks per SM).
    # An odd row count leaves the last block one row; lengths that do and do not
    # fill every thread's slots; weight and bias both, one, or none.
    vec = 16 // dtype.itemsize
    for nvec in (257, 512, 1024, 1500, 2048):
        cols = nvec * vec
        x = torch.randn(2049, cols, device="cuda").to(dtype)
        w, b = (torch.rand(cols, device="cuda") + 0.5).to(dtype), torch.randn(cols, device="cuda").to(dtype)
        ones, zeros = torch.ones_like(w), torch.zeros_like(b)
        for wt, bt, rw, rb in ((w, b, w, b), (w, None, w, zeros), (None, None, ones, zeros)):
            out = ops.layer_norm(x, wt, bt, OP.eps, method)
            OP.check(out, reference.layer_norm(x, rw, rb, OP.eps), dtype,
                     f"2,049 x {cols}, weight {wt is not None}, bias {bt is not None}")


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_of_4097_to_8192_vectors(ops, method, dtype):
    # Rows of 4,097 to 8,192 16-byte vectors (fp32 16,388 to 32,768 columns, 16-bit
    # twice that): one block of 1,024 threads x 8 vectors a row. Lengths that do and
    # do not fill every slot, one row, a few, more than the SMs, rows starting off a
    # 16-byte boundary (x and y alike: peeled); a NaN row; weight and bias both, one,
    # or none; out filled with NaN.
    vec = 16 // dtype.itemsize
    for cols, rows, start in ((4097 * vec, 37, 0), (6000 * vec + 3, 300, 1), (8191 * vec, 1, 0),
                              (8192 * vec, 300, 0)):
        x = spread_rows(1, rows * cols + 1, dtype, method).view(-1)[start:start + rows * cols].view(rows, cols)
        x[rows // 2, cols // 3] = float("nan")
        check_weight_and_bias_cases(ops, x, method, f"{rows} x {cols}, start {start}", start, rows // 2)


@pytest.mark.parametrize("method", [STAGE.variant("welford"), STAGE.variant("two-pass"), STAGE.variant("one-pass")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_long_rows_stashed_in_shared_memory(ops, method, dtype):
    # Rows past the register path: where the rows in flight would fill more than
    # half of L2 (rows over about 96 KB on an H100, 119 KB on an H200), the first
    # sweep keeps as much of the row as shared memory holds and later sweeps read
    # it back. On the scalar path (x and y misaligned differently) rows of 64 KB
    # (no stash) and 108 KB (stashed whole on an H100); on the 16-byte path rows
    # past 8,192 vectors: 256 KB (in part; the rest is read again from global
    # memory) and a row starting off a 16-byte boundary (peeled); weight and bias
    # both, one, or none; a NaN row stays alone.
    size = dtype.itemsize
    vec = 16 // size
    for cols, start, y_start in ((4097 * vec, 0, 1), (27000 * 4 // size, 0, 1), (16384 * vec, 0, 0),
                                 (8193 * vec + 1, 1, 1), (50001, 1, 0)):
        rows = 300
        x = torch.randn(rows * cols + 1, device="cuda").to(dtype)[start:start + rows * cols].view(rows, cols)
        x[7, cols // 2] = float("nan")
        check_weight_and_bias_cases(ops, x, method, f"{rows} x {cols}, start {start}, y start {y_start}", y_start, 7)


def test_row_pairs_past_the_grid_cap(ops):
    # 131,073 rows: more pairs than the grid's 65,535 blocks, so blocks loop, and
    # the last pair is a single row.
    rows, cols = 131_073, 1032
    x = torch.randn(rows, cols, device="cuda")
    w, b = torch.rand(cols, device="cuda") + 0.5, torch.randn(cols, device="cuda")
    out = ops.layer_norm(x, w, b, OP.eps, 0)
    for part in (slice(0, 64), slice(131_040, rows)):
        OP.check(out[part], reference.layer_norm(x[part], w, b, OP.eps), torch.float32, f"rows {part}")


def far_first_rows(rows, cols, dtype):
    """N(0, 1) rows whose first element lies 1e2, 1e3, 1e4 or 3e4 times the row's mean
    |x| away from zero (either sign, at most 6e4: fp16's range), every 16th row also
    offset by 1e3 as a whole. The stage's shift is x[0]: for these rows it lies far
    from the mean, and fp32 ones take recentered's second pass."""
    x = torch.randn(rows, cols, device="cuda")
    k = torch.arange(rows, device="cuda")
    scale = torch.tensor([1e2, 1e3, 1e4, 3e4], device="cuda")[k % 4]
    big = (scale * x.abs().mean(dim=1)).clamp(max=6e4)
    x[:, 0] = torch.where(k % 8 < 4, big, -big)
    x[k % 16 == 15] += 1e3
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_whose_first_element_is_far_from_the_rest(ops, dtype):
    # x[0] (the shift) 1e2 to 3e4 times the row's mean |x|: with the shift alone fp32
    # rows came out at up to 8 times the tolerance; the stage (Welford) takes their
    # statistics again about the mean (the two-pass comparison keeps the shift's
    # limit, as the chapter says). Every fp32 kernel: short rows
    # (warp groups, 128 floats two a thread), a few rows a block each, rows within and
    # past the L2 at and between the powers of two and off the vector boundary, rows
    # past the registers (streaming), x a view one element in with out at x's offset
    # (peeled) and aligned (scalar); weight and bias both, one, or none. 16-bit rows
    # off the boundary past the L2 with weight and bias given (4,097 and 16,383
    # halves) take, on a GPU like the H200, layernorm_offset_wb_kernel, whose sums
    # about x[0] must be recentered for such rows too.
    method = STAGE.variant("welford")
    past_l2 = bench.l2_bytes() // (2 * dtype.itemsize)
    cases = [(4099, 128), (3000, 500), (37, 1000), (8, 4096), (5, 3001), (257, 4096), (257, 16384)]
    cases += [(past_l2 // c + 3, c) for c in (1024, 4096, 5000, 8192, 16384, 4097, 16383)]
    cases += [(300, 6000), (4, 40000), (3, 65537)]
    for rows, cols in cases:
        check_weight_and_bias_cases(ops, far_first_rows(rows, cols, dtype), method, f"{rows} x {cols}")
    for out_start in (1, 0):
        rows, cols = 300, 2000
        x = placed(far_first_rows(rows, cols, dtype), 1)[1]
        check_weight_and_bias_cases(ops, x, method, f"{rows} x {cols}, one element in, out at {out_start}", out_start)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_cases_against_float64(ops, dtype):
    # Drawn afresh every run; a failure names the seed and the case. Row lengths: half
    # 1,024 to 16,384, a quarter shorter, a quarter up to 70,000. Rows: enough to move
    # more than the L2 (where the kernels shaped to the row, on and off the vector
    # boundary, take over) or 1 to 3,000. x and out 0 to 7 elements into their buffers,
    # out at x's offset or not; weight and bias each aligned or 1 to 7 elements in, through
    # check_weight_and_bias_cases. Values N(0, s^2) plus up to 1e4 (fp32) or 100; some
    # fp32 launches of rows whose x[0] lies far from the rest (far_first_rows; the stage
    # only: two-pass keeps the shift's limit), a constant row and a NaN row.
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    l2 = bench.l2_bytes()

    def log_uniform(lo, hi):
        return int(math.exp(rng.uniform(math.log(lo), math.log(hi + 1))))

    for _ in range(24):
        u = rng.random()
        cols = log_uniform(1024, 16384) if u < 0.5 else log_uniform(1, 1023) if u < 0.75 else log_uniform(16385, 70000)
        rows = l2 // (2 * dtype.itemsize * cols) + rng.randint(1, 300) if rng.random() < 0.6 else log_uniform(1, 3000)
        rows = max(1, min(rows, 2**25 // cols))
        method = rng.choice(STABLE)
        x_at = rng.randint(0, 7)
        out_at = x_at if rng.random() < 0.6 else rng.randint(0, 7)
        w_at, b_at = (None if rng.random() < 0.7 else rng.randint(1, 7) for _ in range(2))
        shift = rng.choice([0.0, 1e2, 1e3, 1e4] if dtype == torch.float32 else [0.0, 10.0, 100.0])
        scale = rng.choice([0.01, 1.0, 100.0])
        far = dtype == torch.float32 and method == STAGE.variant("welford") and rng.random() < 0.3
        x = (far_first_rows(rows, cols, torch.float32) if far else torch.randn(rows, cols, device="cuda")) * scale
        x += shift
        const_row, nan_row = rng.randrange(rows), rng.randrange(rows)
        x[const_row] = shift + 1.25
        x[nan_row, rng.randrange(cols)] = math.nan
        x = placed(x.to(dtype), x_at)[1]
        case = (f"seed {seed}: {rows} x {cols}, method {method}, x at {x_at}, out at {out_at}, weight at {w_at}, "
                f"bias at {b_at}, values {scale} N + {shift}, far first {far}")
        check_weight_and_bias_cases(ops, x, method, case, out_at, nan_row, w_at, b_at, const_row)
