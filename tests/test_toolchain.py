"""Toolkit discovery, including a PATH whose nvcc is a wrapper script."""

import os
import stat

import pytest

from kernelbook import toolchain


def fake_toolkit(root):
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.0'\n")
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IEXEC)
    (root / "include" / "cuda_runtime.h").write_text("")
    return root


def test_nvcc_shim_resolves_to_real_toolkit(tmp_path, monkeypatch):
    toolkit = fake_toolkit(tmp_path / "opt" / "cuda-13.0")
    shim_dir = tmp_path / "usr" / "bin"
    shim_dir.mkdir(parents=True)
    shim = shim_dir / "nvcc"
    shim.write_text(f'#!/bin/sh\nexec {toolkit}/bin/nvcc "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(shim_dir) + os.pathsep + os.environ["PATH"])
    # torch's guess would be the shim's grandparent, which has no include/cuda_runtime.h
    assert not (shim_dir.parent / "include" / "cuda_runtime.h").exists()
    assert toolchain.find_cuda_home() == toolkit.resolve()


def test_cuda_home_variable_wins_when_valid(tmp_path, monkeypatch):
    toolkit = fake_toolkit(tmp_path / "cuda")
    monkeypatch.setenv("CUDA_HOME", str(toolkit))
    assert toolchain.find_cuda_home() == toolkit


def test_invalid_cuda_home_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nothing-here"))
    found = toolchain.find_cuda_home()
    assert found is None or (found / "bin" / "nvcc").is_file()


def test_report_names_every_tool_and_advises_on_missing():
    items = {i.name: i for i in toolchain.report()}
    for name in ("torch", "GPU", "CUDA_HOME", "nvcc", "ninja", "arch"):
        assert name in items
    for item in items.values():
        if not item.ok:
            assert item.advice, f"{item.name} is missing but the report gives no advice"


def test_configure_sets_build_environment(monkeypatch):
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    home = toolchain.configure()
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == toolchain.gpu_arch()
    if home is not None:
        assert os.environ["CUDA_HOME"] == str(home)


def test_doctor_runs(capsys):
    from kernelbook.cli import main

    assert main(["doctor"]) == 0
    assert "nvcc" in capsys.readouterr().out
