"""QuickReduce's two-shot quantized all-reduce, over torch.distributed (gloo, NCCL or RCCL).

Each of W ranks holds a tensor x_r of n values; all want S = sum_r x_r. The tensor is cut into
W segments, rank s owns segment s:

1. **quantise and scatter** - rank r encodes each segment j of x_r and sends it to rank j
   (one ``all_to_all``: every rank sends (W-1)/W of its encoded tensor);
2. **reduce** - rank s decodes the W encodings of segment s and adds them (float32 here;
   QuickReduce adds in the input's 16-bit type);
3. **re-quantise and gather** - rank s encodes its reduced segment once and every rank gathers
   all W of them (one ``all_gather``);
4. **decode** - every rank decodes the W reduced segments: all ranks end with the same bits.

As in QuickReduce, a rank's own segment goes through the codec too, so the result does not depend
on who owns what. Wire traffic per rank is 2 (W-1)/W x the encoded size, against 2 (W-1)/W x the
16-bit size for a ring or two-shot all-reduce of the raw tensor. This module runs the algorithm
with torch.distributed collectives (so it runs on a CPU with gloo); QuickReduce itself fuses all
of it into one kernel that writes straight into its peers' memory over xGMI.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from rocmlab.comm import torch_codec as C
from rocmlab.comm import triton_codec as T

SUPPORTED_WORLD_SIZES = (2, 4, 8)


def check_collective(x: torch.Tensor, codec: C.Codec, world_size: int) -> None:
    """Raise :class:`~rocmlab.comm.torch_codec.CodecError` with a fix for what the two-shot does not take."""
    C.check_input(x, C.get_codec("q8", codec.block_size) if not codec.quantized else codec) \
        if (codec.quantized or not isinstance(x, torch.Tensor) or x.dtype not in C.INPUT_DTYPES) else None
    if world_size not in SUPPORTED_WORLD_SIZES:
        raise C.CodecError(
            f"world size {world_size} is not supported: the QuickReduce two-shot runs on 2, 4 or 8 ranks "
            "(vLLM's QuickAllReduce._SUPPORTED_WORLD_SIZES), so that each rank owns an equal, aligned segment. "
            "Use exact_all_reduce (torch.distributed.all_reduce) for other world sizes")
    unit = world_size * (codec.block_size if codec.quantized else 1)
    n = x.numel()
    if n % unit:
        pad = -n % unit
        what = f"world_size x block_size = {world_size} x {codec.block_size}" if codec.quantized else \
            f"the world size {world_size}"
        raise C.CodecError(
            f"size {n} is not a multiple of {what} = {unit}: every rank's segment must hold whole blocks. "
            f"Pad the tensor with {pad} zeros (to {n + pad} values)")


def _gather(out: torch.Tensor, inp: torch.Tensor, group) -> None:
    fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    fn(out, inp, group=group)


def two_shot_all_reduce(x: torch.Tensor, codec="q4", group=None, impl: str = "auto", block_size: int = 32,
                        scale_dtype: torch.dtype = torch.float16, cast_bf16_to_fp16: bool = False,
                        _die_after_scatter: bool = False) -> torch.Tensor:
    """The sum over all ranks of ``x`` (float16/bfloat16), through ``codec`` (fp, fp8, fp8fnuz, q8, q6, q4).

    ``cast_bf16_to_fp16`` does what ``VLLM_ROCM_QUICK_REDUCE_CAST_BF16_TO_FP16=1`` does: bfloat16 input
    goes through the codec as float16 and the result is cast back."""
    codec = C.get_codec(codec, block_size, scale_dtype) if not isinstance(codec, C.Codec) else codec
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialised: start the ranks with "
                           "rocmlab.comm.launch.launch(...) (or torchrun) first")
    world = dist.get_world_size(group)
    if not isinstance(x, torch.Tensor) or x.dtype not in C.INPUT_DTYPES:
        C.check_input(x, codec)                      # raises the dtype message
    check_collective(x, codec, world)
    orig_dtype = x.dtype
    if cast_bf16_to_fp16 and x.dtype == torch.bfloat16:
        x = x.to(torch.float16)
    flat = x.contiguous().view(-1)
    n = flat.numel()
    seg = n // world

    # 1. quantise every segment and scatter: segment j goes to rank j
    encs = [T.encode(flat[j * seg:(j + 1) * seg], codec, impl=impl) for j in range(world)]
    pb = encs[0].nbytes
    slot = -(-pb // 16) * 16          # each payload starts 16-byte aligned (word views, vector loads)
    send = torch.zeros(world * slot, dtype=torch.uint8, device=flat.device)
    for j, e in enumerate(encs):
        send[j * slot:j * slot + pb] = e.payload
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    if _die_after_scatter:                           # for the tests: a rank that dies mid-collective
        os._exit(3)

    # 2. reduce the segment this rank owns (float32 sum, rank order)
    acc = torch.zeros(seg, dtype=torch.float32, device=flat.device)
    for s in range(world):
        acc += T.decode(C.Encoded(recv[s * slot:s * slot + pb], codec, seg, flat.dtype), torch.float32, impl=impl)
    reduced = acc.to(flat.dtype)

    # 3. re-quantise once and gather every rank's reduced segment
    mine = torch.zeros(slot, dtype=torch.uint8, device=flat.device)
    mine[:pb] = T.encode(reduced, codec, impl=impl).payload
    gathered = torch.empty(world * slot, dtype=torch.uint8, device=flat.device)
    _gather(gathered, mine, group)

    # 4. decode all segments
    out = torch.empty_like(flat)
    for s in range(world):
        T.decode(C.Encoded(gathered[s * slot:s * slot + pb], codec, seg, flat.dtype), impl=impl,
                 out=out[s * seg:(s + 1) * seg])
    return out.view(x.shape).to(orig_dtype)


def exact_all_reduce(x: torch.Tensor, group=None) -> torch.Tensor:
    """The reference: the sum in float64 (exact for 16-bit inputs and up to 8 ranks)."""
    y = x.detach().to(torch.float64).clone()
    dist.all_reduce(y, group=group)
    return y


def native_all_reduce(x: torch.Tensor, group=None) -> torch.Tensor:
    """torch.distributed.all_reduce in x's own dtype: what RCCL/NCCL (or gloo) do without a codec."""
    y = x.detach().clone()
    dist.all_reduce(y, group=group)
    return y


def wire_bytes_per_rank(codec, numel: int, world_size: int, block_size: int = 32) -> int:
    """Bytes each rank sends in the two-shot: (W-1)/W of its encoding, twice (each piece padded to 16 bytes)."""
    c = C.get_codec(codec, block_size)
    return 2 * (world_size - 1) * (-(-c.wire_bytes(numel // world_size) // 16) * 16)


def two_shot_error_bound(inputs: list[torch.Tensor], codec, block_size: int = 32,
                         scale_dtype: torch.dtype = torch.float16) -> torch.Tensor:
    """A per-value bound on |two_shot(inputs) - sum(inputs)|, from all ranks' inputs (float32, flat).

    Stage 1: every rank's segment error (:func:`~rocmlab.comm.torch_codec.error_bound`); the float32 sum
    is rounded once to the 16-bit dtype; stage 2 re-quantises the reduced value, bounded with a full
    step of a block maximum that covers |sum| plus the stage-1 error; then the final rounding."""
    codec = C.get_codec(codec, block_size, scale_dtype)
    dtype = inputs[0].dtype
    exact = torch.stack([t.reshape(-1).double() for t in inputs]).sum(0).float()
    half_ulp = lambda v: C.ulp(v, dtype) / 2  # noqa: E731
    if not codec.quantized:
        return half_ulp(exact.abs() * (1 + 2 ** -10)) + 1e-30
    e1 = sum(C.error_bound(t.reshape(-1), codec) for t in inputs)
    z = exact.abs() + e1
    e1r = e1 + half_ulp(z * (1 + 2 ** -10))
    z = exact.abs() + e1r
    zb = z.view(-1, codec.block_size)
    a = zb.amax(1, keepdim=True)
    fi = torch.finfo(codec.scale_dtype)
    eps_s = fi.eps
    sub = fi.smallest_normal * fi.eps / 2
    if codec.is_fp8:
        m = codec.fp8_max
        e2 = (torch.maximum(zb / 8, a / m * 2 * C.fp8_half_subnormal_step(codec)) + a * eps_s * 2 + m * sub)
    else:
        e2 = (a / codec.levels) * (1 + eps_s) + a * eps_s * 2 + codec.levels * sub
    e2 = e2.expand_as(zb).reshape(-1)
    total = e1r + e2
    return total + half_ulp((exact.abs() + total) * (1 + 2 ** -10))
