"""Hand in from a notebook: any graded item (:mod:`rocmlab.grader.items`) to the workshop's exchange.

    hand_in("08-mi300x-package/xcd-remap", xcd_remap_kernel)    # a function or @triton.jit kernel: its source
    hand_in("vector-add", "my-work/vector-add/vector_add.hip")     # a file, as it is on disk now
    hand_in("11-counters-and-faults/oob_write-line", {"line": 10})  # a question's value
    hand_in("04-vllm-on-rocm/meet-a-serving-target", {"max_concurrency": 4})   # Lab 04's settings
    handin_button(item, answer)                                    # the same, as a "Hand in" button
    handin_box(item, answer)                                       # the button and its message, to display

A function or kernel is handed in as a ``.py`` file: the imports a course answer needs (torch, triton,
triton.language as tl, math) and the function's own source, read from the cell that defined it. Helpers it
calls must be handed in with it: write the answer as one file and hand that in (``rocmlab handin ITEM FILE``).
What the notebook shows next to "Grade again" is a self-check; the instructor's grade comes back through
``rocmlab progress`` ("instructor-graded") after the instructor's ``rocmlab grade --exchange``.
"""

from __future__ import annotations

import inspect
import json
import textwrap
from pathlib import Path

#: Where notebook hand-ins are written before they go to the exchange (beside the notebook).
HANDIN_DIR = Path("my-work") / "handin"
HEADER = "import math\n\nimport torch\nimport triton\nimport triton.language as tl\n\n\n"


def answer_text(item_id: str, answer) -> tuple[str, str]:
    """(file text, suffix) of ``answer`` for the item: a path's file as it is, a function's source under the
    item's name, or a question's value as JSON."""
    from rocmlab.grader import items

    item = items.get(item_id)
    if isinstance(answer, (str, Path)) and Path(answer).suffix:
        return "", Path(answer).suffix
    if item.suffix == ".json":                          # a question's value, Lab 04's settings
        value = answer if isinstance(answer, dict) or not item.name else {item.name: answer}
        return json.dumps(value) + "\n", ".json"
    fn = getattr(answer, "fn", answer)                  # a @triton.jit kernel keeps its Python function in .fn
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise ValueError(f"cannot read the source of {answer!r}: define it in a notebook cell or a file, or hand "
                         f"in a file with `rocmlab handin {item.id} FILE{item.suffix}`") from None
    name = getattr(fn, "__name__", item.name)
    if name != item.name:
        src += f"\n\n{item.name} = {name}\n"
    return HEADER + src, ".py"


def hand_in(item_id: str, answer, *, learner: str | None = None, exchange=None) -> Path:
    """Hand ``answer`` in for ``item_id``; returns where the exchange put it. Raises ExchangeError (or
    UnknownItem, ValueError) with the learner's fix."""
    from rocmlab.grader import items
    from rocmlab.workshop import exchange as xch

    item = items.get(item_id)
    text, suffix = answer_text(item_id, answer)
    if not item.accepts(suffix):
        raise ValueError(f"{item.id} takes a {item.suffix} answer, not a {suffix} file")
    if text:
        path = HANDIN_DIR / f"{items.flat(item.id)}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    else:
        path = Path(answer)
    return xch.handin(item.id, path, learner, exchange)


def self_study_text(item_id: str) -> str:
    """One line for a learner with no workshop exchange: what a hand-in is for, and how to get a grade of record
    alone, with an exchange of their own graded by the same command an instructor runs."""
    from rocmlab.workshop.exchange import current_learner

    try:
        me = current_learner()
    except ValueError:
        me = "YOUR_NAME"
    x = "~/rocmlab-exchange"
    return (f"no workshop exchange here (ROCMLAB_EXCHANGE is unset): a hand-in gets a grade of record, your answer "
            f"re-graded in a sandbox on fresh inputs and kept apart from your self-checks. Alone, make an exchange "
            f"of your own once (rocmlab handin --prepare {me} --exchange {x}), start JupyterLab with "
            f"ROCMLAB_EXCHANGE={x} and hand in, then grade it with the instructor's command: rocmlab grade "
            f"--exercise {item_id} --exchange {x}; rocmlab progress --exchange {x} shows it as instructor-graded.")


def no_exchange(exchange=None) -> bool:
    """True when no exchange is given and ROCMLAB_EXCHANGE is unset (self-study)."""
    from rocmlab.settings import env

    return not exchange and not env("ROCMLAB_EXCHANGE")


def handin_button(item_id: str, answer):
    """A **Hand in** button (and its message) for ``answer``: a path (read when pressed), a function or a
    kernel, or a zero-argument callable that returns the current answer."""
    import ipywidgets as w

    from rocmlab.course.verdict import verdict_html
    from rocmlab.grader.spec import ExerciseError
    from rocmlab.workshop.exchange import ExchangeError

    btn = w.Button(description="Hand in", icon="upload", tooltip=f"hand in {item_id} for the instructor's grade")
    msg = w.HTML()

    def press(_=None):
        if no_exchange():
            msg.value = verdict_html(None, self_study_text(item_id), mark="not handed in: self-study")
            return
        try:
            where = hand_in(item_id, answer)
        except (ExchangeError, ExerciseError, ValueError, OSError) as exc:
            msg.value = verdict_html(None, f"not handed in: {exc}", mark="not handed in")
            return
        msg.value = verdict_html(True, f"handed in as {where.name}: the instructor's grader re-grades it in a "
                                       "sandbox; `rocmlab progress` shows the grade once it is back",
                                 mark="handed in")

    btn.on_click(press)
    btn.message = msg
    return btn


def handin_box(item_id: str, answer):
    """The Hand in button with its message under it, ready to display in a cell."""
    import ipywidgets as w

    btn = handin_button(item_id, answer)
    return w.VBox([btn, btn.message])
