"""Trap rules: what the hardware does not have or has otherwise, whatever the code's wave size.

Inline PTX (``inline-ptx``: no such thing on AMD); texture fetches, references and bindings
(``texture-fetch``: gfx942/gfx950 have no image instructions, gfx90a does; ``texture-reference``: removed
in CUDA 12 and ROCm 6); compute-capability tests and device properties whose values differ on AMD
(``compute-capability``, ``device-prop-field``); a shared tile padded for 32 banks
(``shared-padding-32-banks``, info).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rocmlab import targets
from rocmlab.cuda2hip.scan.predefined import wavefront_size

if TYPE_CHECKING:
    from rocmlab.cuda2hip.scan.scanner import Scanner

#: Device properties whose values differ on AMD (``.warpSize`` is the wave rules' own: compared with 32).
DEVICE_PROP = {"sharedMemPerMultiprocessor", "maxSharedMemoryPerMultiProcessor", "regsPerMultiprocessor",
               "l2CacheSize", "persistingL2CacheMaxSize", "sharedMemPerBlockOptin"}
TEXTURE_FETCH = re.compile(r"^(?:tex(?:1D|2D|3D)(?:fetch|Layered|Lod|Grad)*|tex1Dfetch|texCubemap\w*|tex2Dgather|"
                           r"surf(?:1D|2D|3D|Cubemap)(?:Layered)?(?:read|write))$")


def id_rules(s: Scanner, u, flat, i, a):
    """The hardware rules of the identifier at flat[i] (``a``: its line is compiled)."""
    t = flat[i]
    tx = t.text
    n = len(flat)
    nxt = flat[i + 1].text if i + 1 < n else ""
    W = wavefront_size(s.target)
    if tx in ("asm", "__asm__", "__asm") and (nxt == "(" or (nxt in ("volatile", "__volatile__") and i + 2 < n
                                                          and flat[i + 2].text == "(")):
        s.add(u.path, t.line, t.col, "inline-ptx", "asm", "error",
              "inline assembly (PTX) does not exist on AMD GPUs; the build fails.",
              "replace it with a HIP intrinsic (__lane_id(), __shfl*, atomics, __builtin_amdgcn_*) or C++.", a)
    if TEXTURE_FETCH.match(tx) and nxt in ("(", "<"):
        record = targets.find(s.target)
        images = bool(record and record.image_instructions)
        s.add(u.path, t.line, t.col, "texture-fetch", "texture", "warning" if images else "error",
              f"{tx} reads through the texture unit: "
              + (f"{s.target} ({record.product}) has image instructions, so it compiles; check the addressing "
                 "and filter modes." if images else
                 f"{s.target} has no image instructions, so ROCm stops at compile time with 'The "
                 "image/texture API not supported on the device'."),
              ("a manual fix (rocmlab port rewrites only 1D element fetches): pass the array's pointer and "
               "pitch to the kernel; with point sampling (unnormalized coordinates, clamp), tex2D(t, x, y) is "
               "row min(max((int)y, 0), h - 1), column min(max((int)x, 0), w - 1); linear filtering needs "
               "the bilinear weights in code (or a texture object on gfx90a)." if tx.startswith("tex2D") else
               "use a texture object (hipTextureObject_t, hipCreateTextureObject) on gfx90a; on gfx942/gfx950 "
               "read the array with plain global loads (const __restrict__ pointers, __ldg) and do the "
               "interpolation or border handling in code."), a)
    if tx == "texture" and nxt == "<":
        s.add(u.path, t.line, t.col, "texture-reference", "texture", "error",
              "texture references were removed (CUDA 12, ROCm 6): this declaration does not compile.",
              "rocmlab port rewrites a 1D reference read only with tex1Dfetch into a plain pointer; this one "
              "is used otherwise (2D, a filter mode, an array binding): use a texture object "
              "(hipTextureObject_t, hipCreateTextureObject) on gfx90a, or plain global loads.", a)
    if re.match(r"(?:cuda|hip)(?:Bind|Unbind)Texture", tx) and nxt == "(":
        s.add(u.path, t.line, t.col, "texture-reference", "texture", "error",
              f"{tx} binds a texture reference; those were removed in CUDA 12 and ROCm 6.",
              "use a texture object (hipCreateTextureObject) or plain global loads.", a)
    if tx in ("major", "minor") and i > 0 and flat[i - 1].text in (".", "->") and \
            nxt in (">=", "<=", "==", "!=", "<", ">", "*"):
        # not wrong by itself (AMD reports its own major/minor, 9.4 on MI300X): a test to read, a warning
        s.add(u.path, t.line, t.col, "compute-capability", "device-prop", "warning",
              f"a compute-capability test (.{tx} {nxt} ...) means nothing on AMD: {s.target} reports its "
              "own numbers.", "test the architecture name instead: prop.gcnArchName.", a)
    elif tx in DEVICE_PROP and i > 0 and flat[i - 1].text in (".", "->"):
        s.add(u.path, t.line, t.col, "device-prop-field", "device-prop", "warning",
              f".{tx} has different values on AMD (64 KiB LDS per CU, wavefront {W}, L2 per XCD).",
              "read it at run time; never carry NVIDIA's numbers over.", a)
    if tx == "__shared__":
        padding_rule(s, u, flat, i, a)


def padding_rule(s: Scanner, u, flat, i, a):
    k = i
    while k < len(flat) and k < i + 40 and flat[k].text != ";":
        if flat[k].text == "[" and k + 4 < len(flat) and flat[k + 2].text == "+" and flat[k + 3].text == "1" \
                and flat[k + 4].text == "]":
            s.add(u.path, flat[k].line, flat[k].col, "shared-padding-32-banks", "lds", "info",
                  "a shared tile padded by one word assumes 32 banks of 4 bytes; CDNA's LDS has 32 banks too, "
                  "but a 64-lane wavefront is served in two halves and wider accesses change the pattern.",
                  "keep it for 4-byte accesses; measure bank conflicts when you change the access width.", a)
            return
        k += 1
