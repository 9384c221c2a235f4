"""TF32 on ROCm needs HIPBLASLT_ALLOW_TF32=1 beside allow_tf32: the TF32 context sets both there, and
restores both; on CUDA (and CPUs) it leaves the environment alone."""

from __future__ import annotations

import os

import torch

from rocmlab.profile import ops


def test_rocm_tf32_context_sets_and_restores_hipblaslt_allow_tf32(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "7.2.0", raising=False)
    monkeypatch.delenv(ops.HIPBLASLT_TF32_ENV, raising=False)
    before = torch.backends.cuda.matmul.allow_tf32
    with ops._tf32_context(True)():
        assert os.environ[ops.HIPBLASLT_TF32_ENV] == "1" and torch.backends.cuda.matmul.allow_tf32
    assert ops.HIPBLASLT_TF32_ENV not in os.environ and torch.backends.cuda.matmul.allow_tf32 == before
    monkeypatch.setenv(ops.HIPBLASLT_TF32_ENV, "0")
    with ops._tf32_context(True)():
        assert os.environ[ops.HIPBLASLT_TF32_ENV] == "1"
    assert os.environ[ops.HIPBLASLT_TF32_ENV] == "0"


def test_fp32_and_cuda_leave_the_variable_alone(monkeypatch):
    monkeypatch.delenv(ops.HIPBLASLT_TF32_ENV, raising=False)
    monkeypatch.setattr(torch.version, "hip", "7.2.0", raising=False)
    with ops._tf32_context(False)():
        assert ops.HIPBLASLT_TF32_ENV not in os.environ and not torch.backends.cuda.matmul.allow_tf32
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    with ops._tf32_context(True)():
        assert ops.HIPBLASLT_TF32_ENV not in os.environ
