"""Every stage compiles on its own with nvcc (no torch, no repo include path) and
through torch's builder; the compiler's report shows what each stage promises."""

import pytest

from kernelbook import sass, stages
from kernelbook.build import load_bench, load_stage
from kernelbook.ops import get_op

from conftest import CAN_BUILD, WHY_NOT, needs_cuda_build

CUDA_STAGES = stages.cuda_stages()


@needs_cuda_build
@pytest.mark.parametrize("stage", CUDA_STAGES, ids=lambda s: s.folder)
def test_stage_compiles_standalone(stage):
    report = sass.compile_standalone(stage.path)
    assert report.kernels, "no kernel found in the compiled file"
    assert report.spills == 0, [(k.name, k.spill_bytes) for k in report.kernels if k.spill_bytes]
    mem = sass.memory_instructions(report.opcodes)
    assert any(op.startswith("LDG") for op in mem) and any(op.startswith("STG") for op in mem), mem


@needs_cuda_build
def test_float4_stage_uses_16_byte_accesses_and_chapter_04_does_not():
    wide = {op for op in sass.compile_standalone(stages.get_stage("05").path).opcodes if ".128" in op}
    assert {op.split(".")[0] for op in wide} >= {"LDG", "STG"}, wide
    narrow = [op for op in sass.compile_standalone(stages.get_stage("04").path).opcodes if ".128" in op]
    assert not narrow, narrow


@needs_cuda_build
def test_warp_stage_has_fewer_barriers_than_tree_stage():
    def barriers(chapter, fragment):
        report = sass.compile_standalone(stages.get_stage(chapter).path)
        return sass.kernel_counts(report, fragment)["BAR.SYNC.DEFER_BLOCKING"]

    assert barriers("04", "ILb1E") < barriers("03", "ILb1E")


@pytest.mark.parametrize("stage", stages.STAGES, ids=lambda s: s.folder)
def test_stage_builds_with_torch_builder(stage):
    if stage.is_cuda and not CAN_BUILD:
        pytest.skip(f"cannot build CUDA stages here: {WHY_NOT}")
    ops = load_stage(stage)
    assert hasattr(ops, get_op(stage.op).out_op) or stage.chapter == "01"


@needs_cuda_build
def test_bench_kernels_build():
    ops = load_bench()
    assert hasattr(ops, "copy") and hasattr(ops, "gate_wait")


def test_stale_build_lock_is_cleared(tmp_path):
    # A build killed mid-way leaves torch's lock file; the next build must not wait forever on it.
    import os
    import time

    from kernelbook.build import _remove_stale_lock

    lock = tmp_path / "lock"
    lock.write_text("")
    _remove_stale_lock(tmp_path)
    assert lock.exists(), "a fresh lock belongs to a running build and must stay"
    old = time.time() - 3600
    os.utime(lock, (old, old))
    _remove_stale_lock(tmp_path)
    assert not lock.exists()
