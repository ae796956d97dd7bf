"""Chapter 08 (half-precision RMSNorm) beyond the generic stage tests: every row
length of the chapter's sweep, inputs whose squares overflow fp16, unaligned
rows. Skipped without a GPU."""

import pytest
import torch

from kernelbook import stages
from kernelbook.build import load_stage
from kernelbook.ops import OPS

pytestmark = pytest.mark.gpu
STAGE = stages.get_stage("08")
OP = OPS["rmsnorm"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LENGTHS = [1, 2, 7, 8, 9, 16, 24, 32, 40, 64, 127, 128, 129, 512, 769, 1024, 2048, 4096, 5125, 8192, 16384,
           16387, 65537]


@pytest.fixture(scope="module")
def ops():
    return load_stage(STAGE)


def check_into_nan_out(ops, rows, cols, dtype):
    """rows x cols normalized into a NaN-filled out, against the float64 reference."""
    inputs = OP.make_inputs((rows, cols), dtype, "cuda")
    out = torch.full_like(inputs["x"], float("nan"))
    OP.call_stage(ops, inputs, out)
    OP.check(out, OP.reference(inputs), dtype, f"{rows}x{cols}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cols", LENGTHS)
def test_row_lengths(ops, dtype, cols):
    for rows in (1, 3, 67):
        check_into_nan_out(ops, rows, cols, dtype)


def test_fp16_inputs_whose_squares_overflow_fp16(ops):
    x = (torch.rand(64, 4096, device="cuda") * 1.5e4 + 5e4) * (torch.randint(0, 2, (64, 4096), device="cuda") * 2 - 1)
    x = x.half()
    assert torch.isinf(x[0, :1] * x[0, :1]).all(), "x^2 must overflow fp16 for this test to mean anything"
    w = (torch.rand(4096, device="cuda") + 0.5).half()
    inputs = {"x": x, "weight": w, "eps": OP.eps}
    OP.check(OP.call_stage(ops, inputs), OP.reference(inputs), torch.float16, "|x| near 6e4")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_many_rows_short_and_odd(ops, dtype):
    for shape in ((70_000, 128), (70_001, 769), (65_537, 5)):
        inputs = OP.make_inputs(shape, dtype, "cuda")
        OP.check(OP.call_stage(ops, inputs), OP.reference(inputs), dtype, str(shape))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_many_rows_of_a_few_packs(ops, dtype):
    # More than 256 aligned rows of at most 8 packs: groups of 1, 2 or 4 lanes. 1 to 8
    # packs (4 columns: one fp32 pack, unaligned 16-bit rows) and row counts that leave
    # the last block part full.
    for cols in (4, 8, 16, 24, 32, 40, 56, 64):
        for rows in (257, 4099):
            check_into_nan_out(ops, rows, cols, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_many_rows_of_9_to_64_packs(ops, dtype):
    # More than 256 aligned 16-bit rows of 9 to 16 packs (on an H100: 16 lanes of
    # one pack in blocks of 512) and of 33 to 64 packs (32 lanes in blocks of 128),
    # lengths that fill every slot and lengths that do not, and row counts that
    # leave the last block part full.
    for packs in (9, 12, 16, 17, 33, 40, 63, 64):
        for rows in (257, 4099):
            check_into_nan_out(ops, rows, packs * 8, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_many_peeled_rows_of_65_to_128_packs(ops, dtype):
    # More than 256 16-bit rows of an odd length, so that rows start off a 16-byte
    # boundary (peeled: a head and a tail element-wise), of 65 to 128 whole packs:
    # 32 lanes in blocks of 128. Packs a lane from 3 to 4, row counts that leave the
    # last block part full (4 rows a block).
    for cols in (521, 769, 1023, 1031):
        for rows in (257, 4099, 4102):
            check_into_nan_out(ops, rows, cols, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_few_rows_of_17_to_128_packs(ops, dtype):
    # At most 256 aligned rows of 17 to 128 packs: fp32 takes one block a row of 2
    # packs a thread (32 to 64 threads), 16-bit types the groups; lengths that fill
    # every slot and lengths that do not, and 16 packs, fp32's longest in groups.
    for packs in (16, 17, 31, 32, 33, 64, 100, 128):
        for rows in (1, 37, 256):
            check_into_nan_out(ops, rows, packs * (16 // dtype.itemsize), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_few_rows_one_block_each(ops, dtype):
    # At most 256 rows of 129 to 4,096 packs, a block each: 16-bit types one pack a
    # thread, fp32 two, or four from 32 rows up to one row per SM; row counts on each
    # side of those bounds, rows of whole packs and rows with a head and a tail.
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for cols in (1032, 4096, 4097, 32768 // dtype.itemsize):
        for rows in (1, 31, 32, sms, sms + 1, 256):
            check_into_nan_out(ops, rows, cols, dtype)


def test_many_fp32_rows_three_blocks_per_sm(ops):
    # fp32 rows of 4,100-6,144 floats, more than 256 rows: blocks of 257-384 threads held to
    # 56 registers, three per SM.
    for shape in ((300, 4100), (300, 5125), (257, 6143), (300, 6144)):
        inputs = OP.make_inputs(shape, torch.float32, "cuda")
        OP.check(OP.call_stage(ops, inputs), OP.reference(inputs), torch.float32, str(shape))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_of_4097_to_8192_packs(ops, dtype):
    # One block of up to 1,024 threads per row, 8 packs a thread (fp32 16,388 to
    # 32,768 columns, 16-bit 32,776 to 65,536): lengths that fill every slot and
    # lengths that do not, a few rows and more rows than SMs; rows that are not a
    # whole number of packs (a head and a tail peeled off each row); x starting one
    # element into its allocation, y aligned (the weight and y then move in pieces).
    vec = 16 // dtype.itemsize
    for packs in (4097, 5000, 6144, 8191, 8192):
        for rows in (1, 37, 300):
            check_into_nan_out(ops, rows, packs * vec, dtype)
    for cols in (4097 * vec + 1, 5000 * vec + vec - 1, 8191 * vec + vec - 1):
        check_into_nan_out(ops, 67, cols, dtype)
    rows, cols = 37, 8192 * vec
    inputs = OP.make_inputs((rows, cols + 1), dtype, "cuda")
    inputs["x"] = inputs["x"].view(-1)[1:1 + rows * cols].view(rows, cols)
    inputs["weight"] = inputs["weight"][:cols]
    out = torch.full((rows, cols), float("nan"), device="cuda", dtype=dtype)
    OP.call_stage(ops, inputs, out)
    OP.check(out, OP.reference(inputs), dtype, f"{rows}x{cols}, x one element in")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_aligned_launches_past_the_l2(ops, dtype):
    # Aligned inputs that move more than the L2: on a GPU that loads x with an L2
    # evict_last policy there (an H200, see keep_x_in_l2), every register path in
    # that build: groups of 1-32 lanes (fp32 two rows at once), blocks of 2, 4 and
    # 8 packs a thread, the 40-, 56- and 1,024-thread shapes; and rows that stream.
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    vec = 16 // dtype.itemsize
    for packs in (1, 2, 8, 16, 32, 128, 512, 1024, 1025, 1500, 2048, 4096, 8192, 8193):
        cols = packs * vec
        rows = 3 * l2 // (4 * cols * dtype.itemsize) + 1  # 1.5x the L2 moved, read + write
        check_into_nan_out(ops, rows, cols, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_peeled_launches_past_the_l2(ops, dtype):
    # Rows that are not a whole number of packs (so most start off a 16-byte
    # boundary and take the peeled path) moving more than the L2: on an H200 their
    # body packs are loaded with the L2 policy too. Groups of 8-32 lanes, the
    # peeled rows of 65-128 packs in blocks of 128, blocks of 4 and 8 packs a
    # thread, the 1,024-thread shape (4,097-8,192 packs), and rows that stream.
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    vec = 16 // dtype.itemsize
    packs_and_extra = ((1, 3), (9, 1), (40, 3), (100, 1), (129, 1), (1500, 3), (4096, 1), (6000, 1), (8193, 1))
    for cols in [p * vec + e for p, e in packs_and_extra] + [769, 2047, 5125]:
        rows = 3 * l2 // (4 * cols * dtype.itemsize) + 1  # 1.5x the L2 moved, read + write
        check_into_nan_out(ops, rows, cols, dtype)
