"""Command line: `kernelbook run` (build, verify and benchmark every stage here),
`kernelbook doctor` (what the toolchain has and lacks), `kernelbook readme`
(regenerate the README's chapter table from committed results)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from . import toolchain
from .ops import OPS

README_START, README_END = "<!-- ladder:start -->", "<!-- ladder:end -->"


def doctor(_args) -> int:
    toolchain.configure()
    items = toolchain.report()
    width = max(len(i.name) for i in items)
    for item in items:
        print(f"{'ok ' if item.ok else ' - '} {item.name:<{width}}  {item.value}")
        if item.advice:
            print(f"    {' ' * width}  -> {item.advice}")
    return 0


def run_cpu_chapter(record: dict) -> None:
    import torch

    from . import check
    from .build import load_stage

    ops = load_stage("01")
    shapes = [s for s in check.STANDARD_SHAPES if s[0] * s[-1] <= 300_000]
    checks = check.verify_rms_norm(ops, shapes, device="cpu")
    record["verification"].append({"stage": "01 CPU reference", "op": "rmsnorm", "dtype": "float32", "shapes": len(checks),
                                   "max_rel_err": max(c.max_rel_err for c in checks)})
    x, w = check.random_rmsnorm_inputs((512, 4096))
    ops.rms_norm(x, w, check.EPS)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        ops.rms_norm(x, w, check.EPS)
        times.append(time.perf_counter() - start)
    ms = sorted(times)[2] * 1e3
    nbytes = (2 * x.numel() + w.numel()) * 4
    record["cpu"] = {"rows": 512, "cols": 4096, "ms": ms, "gbps": nbytes / ms / 1e6,
                     "threads": torch.get_num_threads()}
    print(f"01 CPU reference: verified on {len(checks)} shapes; 512 x 4096 in {ms:.2f} ms "
          f"({nbytes / ms / 1e6:.2f} GB/s, one thread)")


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(p) for p in text.lower().replace("×", "x").split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must look like ROWSxCOLS (e.g. 8192x4096), got {text!r}") from None
    if not shape or any(s < 0 for s in shape):
        raise argparse.ArgumentTypeError(f"shape must be non-negative sizes, got {text!r}")
    return shape


def ladders_to_run(args) -> list[tuple[str, str]]:
    """(op, dtype) pairs: those asked for, else the book's default ladders."""
    from . import stages

    if not args.op and not args.dtype:
        return list(DEFAULT_LADDERS)
    ops_ = args.op or sorted({o for s in stages.cuda_stages(args.chapter) for o in s.ops})
    out = []
    for op in ops_:
        dtypes = args.dtype or sorted({d for s in stages.cuda_stages(args.chapter, op) for d in s.dtypes})
        out += [(op, d) for d in dtypes]
    return out


# What `kernelbook run` measures when no --op/--dtype is given (and the README's
# table): each norm and GELU in each dtype. The tanh form of GELU runs the same
# kernels with other arithmetic; chapter 06 measures it.
DEFAULT_LADDERS = tuple((op, d) for op in ("rmsnorm", "layernorm", "gelu") for d in ("float32", "float16", "bfloat16"))


def run(args) -> int:
    toolchain.configure()
    import torch

    from . import ladder, plot, results, stages

    record = results.new_record()
    run_cpu_chapter(record)
    gpu_stages = stages.cuda_stages(args.chapter)
    if not torch.cuda.is_available():
        print(f"GPU stages skipped: no CUDA GPU visible here (torch {torch.__version__}).")
        ok, why = toolchain.can_build_cuda()
        if ok:
            from .build import load_bench, load_stage

            for stage in gpu_stages:
                load_stage(stage)
                print(f"  compile check: {stage.label} built")
            load_bench()
            print("  compile check: copy kernel and stream gate built")
        else:
            print(f"  compile check skipped too: {why}.")
    else:
        for op, dtype in ladders_to_run(args):
            print(f"\n=== {op} {dtype} ===")
            shapes = args.shape or ladder.default_shapes(op, dtype, args.bytes * 2**20)
            ladder.measure_ladder(op, dtype, args.chapter, shapes, with_torch=not args.no_torch,
                                  reps=args.reps, record=record, log=print)
    out = Path(args.out)
    results.save(record, out)
    print(f"\nresults: {out}")
    flagged = [(c["op"], c["dtype"], c["shape"], r["name"], r["flag"]) for c in record["cases"]
               for r in c["results"] if r["flagged"]]
    for f in flagged:
        print(f"flagged: {f[0]} {f[1]} {'x'.join(map(str, f[2]))} {f[3]}: {f[4]}")
    if record["cases"]:
        for k, (op, dtype) in enumerate(results.ladders(record)):
            png = out.with_name(f"{out.stem}{'' if k == 0 else f'-{op}-{dtype}'}.png")
            plot.bandwidth(record, op, dtype).savefig(png, dpi=110)
            print(f"plot:    {png}")
    return 0


def readme(args) -> int:
    from . import results

    record = results.load(args.results)
    table = (f"Measured on {results.device_line(record)}; GB/s counts bytes read + written, "
             f"% is of the copy kernel's bandwidth in the same interleaved rounds (it copies the op's own input into a fresh output, or, where a weight is a visible share of the bytes, the same byte count); "
             f"'flagged' marks a measurement that stayed impossible or noisy after re-measuring.\n")
    for op, dtype in results.ladders(record):
        table += f"\n**{op} {dtype}**\n\n" + results.markdown_ladder(record, op, dtype) + "\n"
    if "cpu" in record:
        cpu = record["cpu"]
        table += (f"\nChapter 01's C++ loop on one core of that machine's CPU: {cpu['rows']}×{cpu['cols']} "
                  f"in {cpu['ms']:.2f} ms, {cpu['gbps']:.1f} GB/s.")
    path = Path(args.readme)
    text = path.read_text()
    if README_START not in text or README_END not in text:
        print(f"{path} has no {README_START} ... {README_END} block", file=sys.stderr)
        return 1
    new = re.sub(re.escape(README_START) + ".*?" + re.escape(README_END),
                 lambda _: f"{README_START}\n{table.strip()}\n{README_END}", text, flags=re.S)
    if args.check:
        if new != text:
            print(f"{path}'s table is out of date: run `kernelbook readme`", file=sys.stderr)
            return 1
        return 0
    path.write_text(new)
    print(f"updated {path}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="kernelbook", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="build, verify and benchmark every stage on this machine")
    p.add_argument("--out", default="runs/latest.json", help="results JSON (a PNG is written beside it)")
    p.add_argument("--bytes", type=int, default=256, help="MiB moved per large case (default 256)")
    p.add_argument("--reps", type=int, default=30, help="timed rounds per contender (median reported)")
    p.add_argument("--op", action="append", choices=sorted(OPS), help="op to measure (repeatable; default: the book's ladders)")
    p.add_argument("--dtype", action="append", choices=["float32", "float16", "bfloat16"],
                   help="dtype to measure (repeatable; default: every dtype the op's stages take)")
    p.add_argument("--chapter", help="measure stages up to this chapter (default: all)")
    p.add_argument("--shape", action="append", type=parse_shape, metavar="RxC",
                   help="a shape to measure, e.g. 8192x4096 (repeatable; default: the op's ladder shapes)")
    p.add_argument("--no-torch", action="store_true", help="time only the stages (no torch or peer contenders)")
    p.set_defaults(func=run)
    p = sub.add_parser("doctor", help="report the toolchain and what is missing")
    p.set_defaults(func=doctor)
    p = sub.add_parser("readme", help="regenerate README's chapter table from a results JSON")
    p.add_argument("--results", default="book/results/ladder.json")
    p.add_argument("--readme", default="README.md")
    p.add_argument("--check", action="store_true", help="only check that the table is up to date")
    p.set_defaults(func=readme)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
