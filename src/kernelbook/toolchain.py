"""Find the tools a CUDA build needs and set the environment torch's builder reads.

torch's cpp_extension guesses CUDA_HOME from the first `nvcc` on PATH. When that
nvcc is a wrapper script (say /usr/local/bin/nvcc exec-ing the real one), the guess
is /usr/local and linking fails, so we resolve the real toolkit ourselves and set
CUDA_HOME before torch's builder is imported.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ARCH = "9.0"  # Hopper; used when no GPU is visible to pick the arch from


def _is_toolkit(path: Path) -> bool:
    return (path / "bin" / "nvcc").is_file() and (path / "include" / "cuda_runtime.h").is_file()


def _nvcc_release(nvcc: Path) -> str | None:
    try:
        out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def find_cuda_home() -> Path | None:
    """The CUDA toolkit root: $CUDA_HOME/$CUDA_PATH if valid, else the real nvcc's
    parent (wrapper scripts resolved), else /usr/local/cuda."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value and _is_toolkit(Path(value)):
            return Path(value)
    nvcc = shutil.which("nvcc")
    if nvcc:
        real = Path(nvcc).resolve()
        if _is_toolkit(real.parent.parent):
            return real.parent.parent
        target = _exec_target(real)  # a shell shim: `exec /path/to/nvcc "$@"`
        if target and _is_toolkit(target.parent.parent):
            return target.parent.parent
    for candidate in (Path("/usr/local/cuda"), *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)):
        if _is_toolkit(candidate):
            return candidate
    return None


def _exec_target(script: Path) -> Path | None:
    try:
        if script.stat().st_size > 64 * 1024:
            return None  # a real binary, not a shim
        text = script.read_text(errors="ignore")
    except OSError:
        return None
    m = re.search(r"exec\s+(\S+/nvcc)\b", text)
    return Path(m.group(1)).resolve() if m else None


def gpu_arch() -> str:
    """Compute capability of GPU 0 as 'X.Y', or DEFAULT_ARCH without a GPU."""
    import torch

    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability(0)
        return f"{major}.{minor}"
    return DEFAULT_ARCH


def configure() -> Path | None:
    """Set CUDA_HOME, PATH (ninja) and TORCH_CUDA_ARCH_LIST; quiet torch's builder.

    Call before importing torch.utils.cpp_extension. Returns the toolkit root or None.
    """
    bin_dir = str(Path(sys.executable).parent)  # the venv's ninja lives beside python
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    cuda_home = find_cuda_home()
    if cuda_home is not None:
        os.environ["CUDA_HOME"] = str(cuda_home)
        os.environ["PATH"] = str(cuda_home / "bin") + os.pathsep + os.environ["PATH"]
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", gpu_arch())
    # Without a GPU, importing cpp_extension logs "No CUDA runtime is found" on stderr.
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
    return cuda_home


@dataclass
class Item:
    name: str
    value: str
    ok: bool
    advice: str = ""


def report() -> list[Item]:
    """What the build and the benchmarks need, each present or not, with advice."""
    import torch

    items = []
    cuda_build = torch.version.cuda is not None
    items.append(Item("python", sys.version.split()[0], True))
    items.append(Item(
        "torch", f"{torch.__version__} (CUDA {torch.version.cuda})" if cuda_build else f"{torch.__version__} (CPU-only build)",
        cuda_build,
        "" if cuda_build else "GPU stages need a CUDA build of torch: pip install torch (not a +cpu wheel)",
    ))
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        driver = driver_version()
        items.append(Item("GPU", f"{props.name}, {props.multi_processor_count} SMs, sm_{props.major}{props.minor}", True))
        items.append(Item("driver", driver or "unknown", True))
    else:
        items.append(Item("GPU", "none visible", False,
                          "GPU stages are compile-checked only; notebooks plot the stored GPU results"))
    cuda_home = find_cuda_home()
    nvcc = cuda_home / "bin" / "nvcc" if cuda_home else None
    release = _nvcc_release(nvcc) if nvcc else None
    items.append(Item("CUDA_HOME", str(cuda_home) if cuda_home else "not found", cuda_home is not None,
                      "" if cuda_home else "install the CUDA toolkit (nvcc) or set CUDA_HOME to its root"))
    items.append(Item("nvcc", f"{nvcc} (release {release})" if release else "not found", release is not None,
                      "" if release else "install the CUDA toolkit that matches torch's CUDA version"))
    if release and cuda_build and release.split(".")[0] != torch.version.cuda.split(".")[0]:
        items[-1].ok = False
        items[-1].advice = f"nvcc {release} and torch's CUDA {torch.version.cuda} differ in major version; builds may fail"
    ninja = shutil.which("ninja") or shutil.which("ninja", path=str(Path(sys.executable).parent))
    items.append(Item("ninja", ninja or "not found", ninja is not None, "" if ninja else "pip install ninja"))
    items.append(Item("arch", os.environ.get("TORCH_CUDA_ARCH_LIST") or gpu_arch(), True))
    return items


def driver_version() -> str | None:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0] if out else None


def can_build_cuda() -> tuple[bool, str]:
    """Whether CUDA stages can be compiled here, and if not, why (one line)."""
    import torch

    if torch.version.cuda is None:
        return False, "torch is a CPU-only build"
    if find_cuda_home() is None:
        return False, "no CUDA toolkit (nvcc) found"
    return True, ""
