import pytest
import torch

from kernelbook import toolchain

toolchain.configure()  # CUDA_HOME, ninja on PATH, arch, quiet builder logs

HAS_GPU = torch.cuda.is_available()
CAN_BUILD, WHY_NOT = toolchain.can_build_cuda()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="no CUDA GPU visible (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(skip)


needs_cuda_build = pytest.mark.skipif(not CAN_BUILD, reason=f"cannot build CUDA stages here: {WHY_NOT}")
