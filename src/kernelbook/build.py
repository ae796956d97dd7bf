"""Compile a chapter's kernel with torch's cpp_extension (ninja) and load its ops.

Each stage's `.cu` is standalone CUDA (no torch headers); the torch op around it
is a small binding from kernelbook/csrc compiled beside it. Builds are cached
under ~/.cache/kernelbook (or $KERNELBOOK_CACHE) by a hash of every input, so a
notebook, a test and `kernelbook run` share one build.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from . import toolchain
from .stages import Stage, get_stage

CSRC = Path(__file__).parent / "csrc"
_loaded: dict[str, object] = {}


class BuildError(RuntimeError):
    """A stage could not be built; the message says what is missing."""


def cache_dir() -> Path:
    root = Path(os.environ.get("KERNELBOOK_CACHE", Path.home() / ".cache" / "kernelbook"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def _digest(paths: list[Path], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:10]


def _remove_stale_lock(build_dir: Path, max_age_s: float = 600.0) -> None:
    # torch's builder waits forever on a lock file left by a killed build.
    lock = build_dir / "lock"
    if lock.exists() and time.time() - lock.stat().st_mtime > max_age_s:
        lock.unlink(missing_ok=True)


DTYPE_DEFINES = {"float32": "-DKERNELBOOK_DTYPE_F32", "float16": "-DKERNELBOOK_DTYPE_F16",
                 "bfloat16": "-DKERNELBOOK_DTYPE_BF16"}


def _build(tag: str, sources: list[Path], launcher: str, cuda: bool, verbose: bool,
           dtypes: tuple[str, ...] = ()) -> object:
    """Compile `sources` into a library registering ops under a unique namespace."""
    import torch

    if cuda:
        ok, why = toolchain.can_build_cuda()
        if not ok:
            raise BuildError(f"cannot build {tag}: {why}. `kernelbook doctor` says what to install.")
    toolchain.configure()
    from torch.utils.cpp_extension import load

    arch = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    inputs = [*sources, *sorted(CSRC.glob("*.h"))]  # every shared header a binding may include
    name = f"kb{tag}_{_digest(inputs, f'{torch.__version__}|{arch}|{launcher}|{dtypes}')}"
    if name in _loaded:
        return _loaded[name]
    build_dir = cache_dir() / name
    build_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_lock(build_dir)
    fresh = not any(build_dir.glob("*.so"))
    if fresh:
        print(f"compiling {tag} (once; about 10 s on 2 cores, then cached) ...", flush=True)
    defines = [f"-DKERNELBOOK_NS={name}", *(DTYPE_DEFINES[d] for d in dtypes)]
    defines += [f"-DKERNELBOOK_LAUNCHER={launcher}"] if launcher else []
    start = time.time()
    try:
        load(name=name, sources=[str(s) for s in sources], build_directory=str(build_dir),
             extra_include_paths=[str(CSRC)], extra_cflags=["-O2", *defines],
             extra_cuda_cflags=["-O3", "-lineinfo"] if cuda else None,
             is_python_module=False, verbose=verbose)
    except Exception as exc:  # compiler output is already on stdout/stderr
        raise BuildError(f"building {tag} failed: {exc}") from exc
    if fresh:
        print(f"compiled {tag} in {time.time() - start:.0f} s", flush=True)
    ops = getattr(torch.ops, name)
    _loaded[name] = ops
    return ops


def load_stage(chapter: str | int | Stage, verbose: bool = False):
    """Build (once) and load a chapter's kernel; returns its op namespace.

    >>> ch02 = load_stage("02")
    >>> y = ch02.rms_norm(x, weight, 1e-6)          # or ch02.rms_norm_out(x, weight, 1e-6, out)
    """
    stage = chapter if isinstance(chapter, Stage) else get_stage(chapter)
    return _build(stage.folder, [stage.path, CSRC / stage.binding], stage.launcher, stage.is_cuda, verbose,
                  stage.dtypes)


def load_bench(verbose: bool = False):
    """The benchmark's own kernels: `.copy(src, dst)`, the speed-of-light copy,
    `.gate_wait(state, ticket, timeout_ns)`, the stream gate, and `.flush_l2(buf)`,
    the L2 flush (see kernelbook.bench)."""
    return _build("bench", [CSRC / "copy.cu", CSRC / "gate.cu", CSRC / "flush.cu", CSRC / "bench_binding.cpp"],
                  "", True, verbose)
