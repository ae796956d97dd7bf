"""The catalogue of chapters: where each stage's source lives and how it binds to torch."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path


def repo_root() -> Path:
    """The checkout holding chapters/ ($KERNELBOOK_ROOT overrides)."""
    if os.environ.get("KERNELBOOK_ROOT"):
        return Path(os.environ["KERNELBOOK_ROOT"])
    here = Path(__file__).resolve()
    for parent in [Path.cwd(), *Path.cwd().parents, *here.parents]:
        if (parent / "chapters").is_dir() and (parent / "src" / "kernelbook").is_dir():
            return parent
    raise FileNotFoundError("cannot find the kernelbook checkout (a folder with chapters/); set KERNELBOOK_ROOT")


@dataclass(frozen=True)
class Stage:
    chapter: str        # "02"
    folder: str         # "02_naive_block_reduction"
    source: str         # the standalone kernel file inside the folder
    title: str
    binding: str        # file in kernelbook/csrc compiled beside the source
    launcher: str = ""  # the launcher the binding calls (CUDA stages), one overload per dtype
    op: str = "rmsnorm"                       # a key of kernelbook.ops.OPS
    more_ops: tuple[str, ...] = ()            # other keys the same kernels compute (GELU's tanh form)
    dtypes: tuple[str, ...] = ("float32",)    # element types the launcher takes
    variants: tuple[tuple[str, int], ...] = ()  # (name, number the op takes) for files with several kernels
    ladder_variants: tuple[str, ...] = ()     # which of them the benchmark ladder times
    unchecked_variants: tuple[str, ...] = ()  # timed, but kept to show a failure: not held to the op's tolerance

    @property
    def path(self) -> Path:
        return repo_root() / "chapters" / self.folder / self.source

    @property
    def is_cuda(self) -> bool:
        return self.path.suffix == ".cu"

    @property
    def label(self) -> str:
        return f"{self.chapter} {self.title}"

    @property
    def ops(self) -> tuple[str, ...]:
        return (self.op, *self.more_ops)

    def variant(self, name: str) -> int:
        return dict(self.variants)[name]

    def checked(self, variant: int | None) -> bool:
        """Whether this kernel must meet the op's tolerance (see unchecked_variants)."""
        return variant not in {self.variant(v) for v in self.unchecked_variants}

    def contenders(self) -> list[tuple[str, int | None]]:
        """(label, variant) for each kernel of this stage that the ladder times."""
        if not self.ladder_variants:
            return [(self.label, None)]
        return [(f"{self.label} · {v}", self.variant(v)) for v in self.ladder_variants]


FLOAT_DTYPES = ("float32", "float16", "bfloat16")

STAGES = [
    Stage("01", "01_cpu_reference", "rmsnorm_cpu.cpp", "CPU reference", "cpu_binding.cpp"),
    Stage("02", "02_naive_block_reduction", "rmsnorm_naive.cu", "naive block reduction",
          "rmsnorm_binding.cpp", "rmsnorm_naive_forward"),
    Stage("03", "03_shared_memory", "rmsnorm_smem.cu", "shared memory",
          "rmsnorm_binding.cpp", "rmsnorm_smem_forward"),
    Stage("04", "04_warp_shuffle", "rmsnorm_warp.cu", "warp shuffle",
          "rmsnorm_binding.cpp", "rmsnorm_warp_forward"),
    Stage("05", "05_float4_vectorization", "rmsnorm_float4.cu", "float4 vectorization",
          "rmsnorm_binding.cpp", "rmsnorm_float4_forward"),
    Stage("06", "06_half2_gelu", "gelu_half2.cu", "half2 GELU", "gelu_binding.cpp", "gelu_forward",
          op="gelu", more_ops=("gelu_tanh",), dtypes=FLOAT_DTYPES,
          variants=(("scalar", 0), ("half2", 1), ("pack", 2), ("half math", 3)),
          ladder_variants=("scalar", "half2", "pack")),
    Stage("07", "07_welford_layernorm", "layernorm_welford.cu", "Welford LayerNorm", "layernorm_binding.cpp",
          "layernorm_forward", op="layernorm", dtypes=FLOAT_DTYPES,
          variants=(("welford", 0), ("two-pass", 1), ("one-pass", 2)),
          ladder_variants=("welford", "two-pass", "one-pass"), unchecked_variants=("one-pass",)),
    Stage("08", "08_half_precision_rmsnorm", "rmsnorm_half.cu", "half-precision RMSNorm", "rmsnorm_binding.cpp",
          "rmsnorm_half_forward", dtypes=FLOAT_DTYPES),
]


def get_stage(chapter: str | int) -> Stage:
    key = f"{int(chapter):02d}" if str(chapter).isdigit() else str(chapter)
    for stage in STAGES:
        if key in (stage.chapter, stage.folder):
            return stage
    raise KeyError(f"no chapter {chapter!r}; known: {', '.join(s.folder for s in STAGES)}")


def cuda_stages(upto: str | int | None = None, op: str | None = None, dtype: str | None = None) -> list[Stage]:
    """The GPU stages, in order, up to and including chapter `upto`; with `op`
    (and `dtype`), only those that compute that op (in that dtype)."""
    last = int(upto) if upto is not None else 99
    return [s for s in STAGES if s.is_cuda and int(s.chapter) <= last
            and (op is None or op in s.ops) and (dtype is None or dtype in s.dtypes)]


def source_diff(old: str | int, new: str | int) -> str:
    """Unified diff between two stages' kernel files (what a chapter changed)."""
    a, b = get_stage(old), get_stage(new)
    lines = difflib.unified_diff(a.path.read_text().splitlines(), b.path.read_text().splitlines(),
                                 f"{a.folder}/{a.source}", f"{b.folder}/{b.source}", lineterm="", n=2)
    return "\n".join(lines)
