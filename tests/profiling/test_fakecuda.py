"""Which device a profile measures on, decided before torch is imported (no torch here).

A CUDA build of torch where no GPU is visible must get the fake CUDA device too: its own
CUDA hooks answer "no device" and abort autograd on fake CUDA tensors. The replay test
(``test_replay.py``) runs the whole profile on such a build where one is installed.
"""

from __future__ import annotations

import pytest

from torchward.profile import fakecuda


@pytest.mark.parametrize("hidden", ["", "-1", " "])
def test_cuda_visible_devices_empty_or_minus_one_hides_every_gpu(monkeypatch, hidden):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
    assert fakecuda.gpu_visible() is False


def test_without_the_driver_nodes_no_gpu_is_visible(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(fakecuda, "Path", lambda p: tmp_path / p.lstrip("/"))
    assert fakecuda.gpu_visible() is False
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidiactl").touch()
    assert fakecuda.gpu_visible() is True


def test_a_cuda_build_without_a_visible_gpu_is_not_measured_natively(monkeypatch, tmp_path):
    (tmp_path / "include").mkdir()  # a wheel that ships its headers
    monkeypatch.setattr(fakecuda, "_LOADED", {})
    monkeypatch.setattr(fakecuda, "torch_dir", lambda: tmp_path)
    monkeypatch.setattr(fakecuda, "_cuda_build", lambda folder: True)
    monkeypatch.setattr(fakecuda, "gpu_visible", lambda: False)
    monkeypatch.setattr(fakecuda.shutil, "which", lambda name: "/usr/bin/g++")
    monkeypatch.delitem(fakecuda.sys.modules, "torch", raising=False)
    loaded = []
    monkeypatch.setattr(fakecuda, "load", lambda cuda_build=False: loaded.append(cuda_build))
    setup = fakecuda.prepare()
    assert setup.device == "cuda" and setup.how == "shim"
    assert loaded == [True]  # the wheel's guard is replaced after its import
    monkeypatch.setattr(fakecuda, "_LOADED", {})
    monkeypatch.setattr(fakecuda, "gpu_visible", lambda: True)
    assert fakecuda.prepare().how == "native"  # with a GPU the wheel's own CUDA serves
