"""Compile a stage on its own with nvcc (no torch, no repo include path) and read
what the compiler made: registers, spills, and the machine instructions (SASS)."""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .toolchain import find_cuda_home


@dataclass
class KernelInfo:
    name: str
    registers: int
    spill_bytes: int
    stack_bytes: int


@dataclass
class CompileReport:
    kernels: list[KernelInfo] = field(default_factory=list)
    opcodes: collections.Counter = field(default_factory=collections.Counter)        # whole file
    per_kernel: dict[str, collections.Counter] = field(default_factory=dict)        # by mangled name

    @property
    def spills(self) -> int:
        return sum(k.spill_bytes for k in self.kernels)


def _tool(name: str) -> str:
    """A CUDA binary tool: the toolkit's, else one on PATH, else the copy Triton ships
    (some slim toolkits come without cuobjdump)."""
    home = find_cuda_home()
    candidates = [home / "bin" / name] if home else []
    if shutil.which(name):
        candidates.append(Path(shutil.which(name)))
    try:
        import triton

        candidates.append(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)
    except ImportError:
        pass
    for path in candidates:
        if path.is_file():
            return str(path)
    raise FileNotFoundError(f"{name} not found (no CUDA toolkit?); `kernelbook doctor` explains")


def compile_standalone(source: str | Path, arch: str = "sm_90", extra: tuple[str, ...] = ()) -> CompileReport:
    """nvcc -std=c++17 -arch=<arch> -cubin on the file alone; raise CalledProcessError with
    the compiler's output if it does not compile."""
    source = Path(source).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "stage.cubin"
        proc = subprocess.run([_tool("nvcc"), "-std=c++17", f"-arch={arch}", "-O3", "-cubin", "-Xptxas", "-v",
                               *extra, "-o", str(cubin), str(source)],
                              capture_output=True, text=True, cwd=tmp, timeout=600)
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
        report = CompileReport(kernels=_parse_ptxas(proc.stderr))
        sass = subprocess.run([_tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True,
                              check=True, timeout=120).stdout
    report.opcodes = count_opcodes(sass)
    for chunk in re.split(r"\n\s*Function : ", sass)[1:]:
        name, _, body = chunk.partition("\n")
        report.per_kernel[name.strip()] = count_opcodes(body)
    return report


def _parse_ptxas(log: str) -> list[KernelInfo]:
    kernels, name, stack, spill = [], None, 0, 0
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\S+)'", line):
            name = m.group(1)
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            stack, spill = int(m.group(1)), int(m.group(2)) + int(m.group(3))
        elif (m := re.search(r"Used (\d+) registers", line)) and name:
            kernels.append(KernelInfo(name, int(m.group(1)), spill, stack))
            name = None
    return kernels


def count_opcodes(sass: str) -> collections.Counter:
    """Count SASS instructions by opcode with width suffixes kept (LDG.E.128, STG.E)."""
    counts = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            counts[m.group(1)] += 1
    return counts


def memory_instructions(counts: collections.Counter) -> dict[str, int]:
    """Global loads/stores by width, e.g. {'LDG.E': 4, 'LDG.E.128': 2}."""
    return {op: n for op, n in sorted(counts.items()) if op.startswith(("LDG", "STG"))}


def kernel_counts(report: CompileReport, *fragments: str) -> collections.Counter:
    """Opcode counts of the one kernel whose mangled name contains every fragment."""
    hits = [k for k in report.per_kernel if all(f in k for f in fragments)]
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} kernels match {fragments}: {hits or list(report.per_kernel)}")
    return report.per_kernel[hits[0]]
