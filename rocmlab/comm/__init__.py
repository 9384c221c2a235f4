"""Quantized all-reduce, after AMD's QuickReduce (as shipped in vLLM and SGLang).

- :mod:`rocmlab.comm.torch_codec`: the exact torch reference of the FP8/Q8/Q6/Q4 block codecs, wire sizes, error metrics.
- :mod:`rocmlab.comm.triton_codec`: fused one-pass Triton encode and decode, bit-exact with the reference.
- :mod:`rocmlab.comm.allreduce`: the two-shot quantized all-reduce over torch.distributed, and the exact baseline.
- :mod:`rocmlab.comm.launch`: start N ranks from a notebook without blocking it.
- :mod:`rocmlab.comm.costmodel`: an alpha-beta model of MI300X (xGMI) and H200 (NVLink) all-reduce.
- :mod:`rocmlab.comm.tuning`: vLLM/SGLang QuickReduce settings: a sweep on ROCm, recommendations everywhere.
"""

from rocmlab.comm.torch_codec import CODECS, QUANTIZED, Codec, CodecError, Encoded, get_codec, wire_bytes

__all__ = ["CODECS", "QUANTIZED", "Codec", "CodecError", "Encoded", "get_codec", "wire_bytes"]
