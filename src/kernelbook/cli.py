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
    record["verification"].append({"stage": "01 CPU reference", "shapes": len(checks),
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


def run(args) -> int:
    toolchain.configure()
    import torch

    from . import ladder, plot, results, stages

    record = results.new_record()
    run_cpu_chapter(record)
    gpu_stages = stages.cuda_stages()
    if not torch.cuda.is_available():
        print(f"GPU stages skipped: no CUDA GPU visible here (torch {torch.__version__}).")
        ok, why = toolchain.can_build_cuda()
        if ok:
            from .build import load_copy, load_stage

            for stage in gpu_stages:
                load_stage(stage)
                print(f"  compile check: {stage.label} built")
            load_copy()
            print("  compile check: copy kernel built")
        else:
            print(f"  compile check skipped too: {why}.")
    else:
        ladder.measure_ladder(gpu_stages[-1].chapter, ladder.default_shapes(args.bytes * 2**20),
                              reps=args.reps, record=record, log=print)
    out = Path(args.out)
    results.save(record, out)
    print(f"\nresults: {out}")
    if record["cases"]:
        fig = plot.bandwidth_vs_cols(record)
        fig.savefig(out.with_suffix(".png"), dpi=110)
        print(f"plot:    {out.with_suffix('.png')}")
    return 0


def readme(args) -> int:
    from . import results, stages

    record = results.load(args.results)
    names = [s.label for s in stages.cuda_stages()] + ["torch F.rms_norm", "torch.compile F.rms_norm"]
    table = (f"Measured on {results.device_line(record)}; GB/s counts bytes read + written, "
             f"% is of the copy kernel's bandwidth on the same bytes in the same run.\n\n"
             + results.markdown_ladder(record, names))
    if "cpu" in record:
        cpu = record["cpu"]
        table += (f"\n\nChapter 01's C++ loop on one core of that machine's CPU: {cpu['rows']}×{cpu['cols']} "
                  f"in {cpu['ms']:.2f} ms, {cpu['gbps']:.1f} GB/s.")
    path = Path(args.readme)
    text = path.read_text()
    if README_START not in text or README_END not in text:
        print(f"{path} has no {README_START} ... {README_END} block", file=sys.stderr)
        return 1
    new = re.sub(re.escape(README_START) + ".*?" + re.escape(README_END),
                 lambda _: f"{README_START}\n{table}\n{README_END}", text, flags=re.S)
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
    p.add_argument("--reps", type=int, default=30, help="timed repetitions per contender (median reported)")
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
