"""The suite's own rules about devices (conftest.py): where a GPU is visible, the CUDA tests run,
and a build of gelu_ext without its CUDA backend fails them rather than skipping them."""

import pytest
import torch

import conftest


class Item:
    """What conftest.pytest_runtest_setup reads of a test."""

    def __init__(self, *marks):
        self.marks = {mark.name: mark for mark in marks}

    def get_closest_marker(self, name):
        return self.marks.get(name)


CUDA_TEST = Item(*[mark.mark for mark in conftest.requires_cuda])


def test_visible_gpu_and_a_build_without_cuda_fail_the_cuda_tests(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(conftest, "CUDA_BUILT", False)
    with pytest.raises(pytest.fail.Exception, match="built without its CUDA backend"):
        conftest.pytest_runtest_setup(CUDA_TEST)
    conftest.pytest_runtest_setup(Item())  # CPU tests are not concerned


def test_cuda_tests_run_or_skip_by_the_gpu_alone(monkeypatch):
    monkeypatch.setattr(conftest, "CUDA_BUILT", True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    conftest.pytest_runtest_setup(CUDA_TEST)  # runs
    (skip,) = [mark.mark for mark in conftest.requires_cuda if mark.mark.name == "skipif"]
    assert "no CUDA GPU visible" in skip.kwargs["reason"]
