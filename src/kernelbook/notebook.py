"""What the chapter notebooks call: one-line setup, source and diff display, and
measure-on-a-GPU-or-load-the-stored-run. Without a GPU every helper still works:
measurements come from the chapter's stored results, labelled with their device."""

from __future__ import annotations

from pathlib import Path

import torch

from . import bench, check, ladder, results, toolchain
from .ops import dtype_of, get_op
from .stages import get_stage, source_diff

HAS_GPU = False


def setup() -> bool:
    """Configure the toolchain and say in one line what this machine can do."""
    global HAS_GPU
    toolchain.configure()
    HAS_GPU = torch.cuda.is_available()
    if HAS_GPU:
        props = torch.cuda.get_device_properties(0)
        print(f"GPU: {props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}")
    else:
        print(f"No GPU here (torch {torch.__version__}): GPU cells say so, and the figures "
              "use the results stored with the chapter.")
    return HAS_GPU


def _markdown(text: str):
    from IPython.display import Markdown

    return Markdown(text)


def show_source(chapter, start: str | None = None, end: str | None = None):
    """The chapter's kernel file (or the lines from `start` up to `end`), as code."""
    stage = get_stage(chapter)
    lines = stage.path.read_text().splitlines()
    if start is not None:
        lines = lines[next(i for i, line in enumerate(lines) if start in line):]
    if end is not None:
        lines = lines[: next(i for i, line in enumerate(lines) if end in line) + 1]
    lang = "cuda" if stage.is_cuda else "cpp"
    return _markdown(f"`{stage.folder}/{stage.source}`\n\n```{lang}\n" + "\n".join(lines) + "\n```")


def show_diff(old, new):
    return _markdown("```diff\n" + source_diff(old, new) + "\n```")


def build(chapter):
    """Compile the chapter's kernel; None (with the reason) where that is impossible."""
    from .build import BuildError, load_stage

    stage = get_stage(chapter)
    if stage.is_cuda:
        ok, why = toolchain.can_build_cuda()
        if not ok:
            print(f"cannot build {stage.folder} here: {why} (`kernelbook doctor` explains)")
            return None
    try:
        ops = load_stage(stage)
    except BuildError as exc:
        print(exc)
        return None
    outs = dict.fromkeys(get_op(name).out_op for name in stage.ops)  # e.g. "rms_norm_out"
    names = [n for out in outs for n in (out.removesuffix("_out"), out) if hasattr(ops, n)]
    print(f"{stage.folder}: built; ops {', '.join(names)}")
    return ops


def verify_here(ops, shapes=None, op="rmsnorm", dtypes=("float32",), variant=None, extra: int = 4):
    """On a GPU: assert the stage against float64 on the op's standard shapes plus
    `extra` fresh random ones, in each dtype, and print one line per shape.
    Without a GPU: say so."""
    if not HAS_GPU or ops is None:
        print("no GPU: the stage is checked against float64 in the stored run below")
        return []
    import random

    op = get_op(op)
    rng = random.Random()
    shapes = list(op.standard_shapes if shapes is None else shapes)
    shapes += [(rng.randint(1, 500), rng.randint(1, 70_000)) for _ in range(extra)]
    checked = []
    for dtype in dtypes:
        got = check.verify(op, ops, shapes, dtype_of(dtype), "cuda", variant)
        for c in got:
            print(f"{dtype:>9} {c.row()}")
        checked += got
    print(f"all {len(checked)} checks within tolerance ({', '.join(dtypes)})")
    return checked


def chapter_results_path(chapter) -> Path:
    stage = get_stage(chapter)
    return stage.path.parent / "results.json"


def ladder_results(chapter, shapes=None, dtypes=None, reps: int = 30, ops=None, cols=None, small=()) -> dict:
    """On a GPU: verify and measure the chapter's op (or each of `ops`), in each
    dtype (the stage's by default), for every stage up to the chapter plus torch
    and peers; store the record beside the chapter and return it. Without a GPU:
    the stored record. Shapes: `shapes` as given, or rows of each length in `cols`
    moving about 256 MiB in each dtype followed by the `small` shapes, or the op's
    own ladder shapes."""
    stage = get_stage(chapter)
    path = chapter_results_path(chapter)
    if HAS_GPU:
        record = results.new_record()
        for name in ops or (stage.op,):
            op = get_op(name)
            for dtype in dtypes or stage.dtypes:
                if cols is not None:
                    shapes_here = [(op.rows_for_bytes(bench.BIG_BYTES, c, dtype_of(dtype)), c) for c in cols]
                    shapes_here += [tuple(s) for s in small]
                else:
                    shapes_here = shapes
                ladder.measure_ladder(op, dtype, chapter, shapes_here, reps=reps, record=record)
        results.save(record, path)
        print(f"measured on {results.device_line(record)}; stored in {path.parent.name}/{path.name}")
    else:
        record = results.load(path)
        print(f"stored run: {results.device_line(record)}")
    assert record["environment"]["device"] != "cpu", "stored results must come from a GPU run"
    assert record["verification"], "a stored run records its correctness checks"
    return record


def print_ladder(record: dict) -> None:
    for case in record["cases"]:
        print(ladder.format_case(case) + "\n")


def result(record: dict, cols: int | None, name_start: str, mode: str = "eager+flush", **where) -> dict:
    """One contender's numbers at one case (name matched by its start, e.g. '05');
    `where` narrows the case (op=, dtype=, shape=)."""
    return results.find_result(results.find_case(record, cols, mode, **where), name_start)


def show_rejections(ops, op="rmsnorm") -> None:
    """Call the op with inputs it must refuse; assert each raises a clear Python
    error (ValueError/TypeError) and print the message. Validation runs before any
    launch, so this works without a GPU too (the first complaint is then the device)."""
    if ops is None:
        print("no build here: nothing to call")
        return
    op = get_op(op)
    cases = op.bad_calls(ops, "cuda" if HAS_GPU else "cpu")
    for what, call in cases.items():
        try:
            call()
        except (ValueError, TypeError) as exc:
            print(f"{what:>20} -> {type(exc).__name__}: {str(exc).splitlines()[0]}")
        else:
            raise AssertionError(f"{what}: accepted, but must raise")
    if HAS_GPU:
        torch.cuda.synchronize()  # nothing was launched, so no error is pending


def book_results() -> dict:
    """The whole-book run (`kernelbook run --out book/results/ladder.json` on a GPU)."""
    from .stages import repo_root

    return results.load(repo_root() / "book" / "results" / "ladder.json")
