"""What the AMD compiler predefines: the macros of hipcc's device and host passes for a target, and
the macros the system headers that matter define once included (system headers are never read).

The scanner folds ``#if`` with exactly these, so it sees the code the AMD compiler compiles: the
device pass has ``__HIP_DEVICE_COMPILE__``, ``__AMDGCN_WAVEFRONT_SIZE`` and ``__gfx942__``; the host
pass does not, and neither defines ``__CUDA_ARCH__``.
"""

from __future__ import annotations

from rocmlab import settings


def wavefront_size(target: str) -> int:
    return settings.WAVEFRONT_SIZE.get(target, 64)


def config_for(target: str, device: bool) -> dict[str, str]:
    """The predefined macros of one hipcc pass (clang, HIP mode) for ``target``."""
    cfg = {"__HIP__": "1", "__HIPCC__": "1", "__HIP_PLATFORM_AMD__": "1", "__HIP_PLATFORM_HCC__": "1",
           "__clang__": "1", "__clang_major__": settings.OFFLINE_CLANG_MAJOR, "__cplusplus": "201703L",
           "__linux__": "1", "__GNUC__": "4", "__STDC_HOSTED__": "1"}
    if device:
        cfg.update({"__HIP_DEVICE_COMPILE__": "1", "__AMDGCN__": "1", "__AMDGPU__": "1",
                    "__AMDGCN_WAVEFRONT_SIZE": str(wavefront_size(target)),
                    "__AMDGCN_WAVEFRONT_SIZE__": str(wavefront_size(target)), f"__{target}__": "1"})
    else:
        cfg.update({"__x86_64__": "1", "__x86_64": "1"})
    return cfg


#: System headers are never read; these are the macros the ones that matter define once included.
SYSTEM_HEADER_MACROS: dict[str, dict[str, str]] = {
    "hip/hip_runtime.h": {"HIP_INCLUDE_HIP_HIP_RUNTIME_H": "1", "HIP_INCLUDE_HIP_HIP_RUNTIME_API_H": "1",
                          "HIP_INCLUDE_HIP_DRIVER_TYPES_H": "1", "HIP_VERSION_MAJOR": settings.OFFLINE_ROCM_VERSION.split(".")[0],
                          "HIP_VERSION_MINOR": settings.OFFLINE_ROCM_VERSION.split(".")[1],
                          "HIP_VERSION": str(int(settings.OFFLINE_ROCM_VERSION.split(".")[0]) * 10000000
                                             + int(settings.OFFLINE_ROCM_VERSION.split(".")[1]) * 100000)},
    "hip/hip_runtime_api.h": {"HIP_INCLUDE_HIP_HIP_RUNTIME_API_H": "1", "HIP_INCLUDE_HIP_DRIVER_TYPES_H": "1"},
    "hip/hip_fp16.h": {"HIP_INCLUDE_HIP_HIP_FP16_H": "1"},
    "hipblas/hipblas.h": {"HIPBLAS_H": "1", "_HIPBLAS_H_": "1"},
    "hipblas.h": {"HIPBLAS_H": "1", "_HIPBLAS_H_": "1"},
    "hipfft/hipfft.h": {"HIPFFT_H_": "1"},
    "hiprand/hiprand.h": {"HIPRAND_H_": "1"},
    "hipsparse/hipsparse.h": {"HIPSPARSE_H": "1"},
    "hipsolver/hipsolver.h": {"HIPSOLVER_H": "1"},
}
for _h in ("hip/hip_runtime.h",):
    SYSTEM_HEADER_MACROS["hip/hip_runtime_api.h"].update({k: v for k, v in SYSTEM_HEADER_MACROS[_h].items()
                                                          if k.startswith("HIP_VERSION")})
