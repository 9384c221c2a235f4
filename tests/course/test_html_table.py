"""rocmlab.html_table: a table never breaks inside a value (one-value cells stay on one line), a wrapped table
breaks long names only at their separators, and pandas tables in a course kernel keep their values whole."""

import random
import re

from rocmlab.html_table import NOWRAP, breakable, html_table, keep_values_whole


def _cells(table: str) -> list[tuple[str, str]]:
    """(style, text without markup) of every <td>/<th>."""
    return [(m.group(2), re.sub(r"<[^>]+>", "", m.group(3)))
            for m in re.finditer(r"<(td|th)[^>]*?style='([^']*)'[^>]*>(.*?)</\1>", table)]


def test_wrap_never_breaks_inside_a_number_or_short_word():
    rng = random.Random()
    numbers = [rng.randrange(10_000, 10_000_000) for _ in range(20)] + [round(rng.uniform(0, 1e4), 3)]
    words = ["gfx942", "gfx950", "128x64", "e4m3fnuz"]
    out = html_table(["LDS B", "target"], [[n, rng.choice(words)] for n in numbers], wrap=True)
    assert "<wbr>" not in out and "overflow-wrap:anywhere" not in out
    for n in numbers:
        assert f">{n:g}<" in out or f">{n}<" in out
    # every one of these cells is one value: laid out on one line
    assert all(style.startswith(NOWRAP) for style, _ in _cells(out)[2:]), out


def test_one_value_cells_stay_whole_and_prose_wraps():
    rng = random.Random()
    names = ["-".join(rng.choice(["hip", "port", "block", "mi300x", "llama", "3.1", "8b"]) for _ in range(3))
             for _ in range(10)]
    prose = [" ".join(rng.choice(["the", "kernel", "reads", "fp8-gemm", "twice"]) for _ in range(8))
             for _ in range(10)]
    out = html_table(["name", "what it does"], [[n, p] for n, p in zip(names, prose, strict=True)])
    cells = _cells(out)[2:]
    assert [t for _, t in cells] == [x for pair in zip(names, prose, strict=True) for x in pair]
    assert all(cells[k][0].startswith(NOWRAP) for k in range(0, 20, 2)), out      # the names: one line each
    assert not any(NOWRAP in cells[k][0] for k in range(1, 20, 2)), out           # control: prose may wrap


def test_wrap_lets_long_names_break_at_their_separators_only():
    out = breakable("v_mfma_f32_32x32x8_f16, buffer_load_dwordx4 a/b.c")
    assert out.count("<wbr>") == 8
    assert re.sub("<[^>]+>", "", out) == "v_mfma_f32_32x32x8_f16, buffer_load_dwordx4 a/b.c"
    # a hyphenated name breaks only after its dot: each piece is kept whole
    name = "01-hip-programming-model.ipynb"
    out = breakable(name)
    assert out == (f"<span style='{NOWRAP}'>01-hip-programming-model.</span><wbr>"
                   f"<span style='{NOWRAP}'>ipynb</span>"), out
    assert breakable("65536") == "65536" and breakable("3.25") == "3.25"
    # control: without wrap the same name stays whole, with no break opportunity at all
    plain = html_table(["MFMA"], [["v_mfma_f32_32x32x8_f16"]])
    assert "<wbr>" not in plain and _cells(plain)[1][0].startswith(NOWRAP)


def test_keep_values_whole_styles_only_one_value_cells():
    rng = random.Random()
    value = f"vllm-mi{rng.randrange(100, 999)}x"
    page = (f"<table><tr><th>{rng.randrange(9)}</th><td>{value}</td><td>two words</td>"
            f"<td id='T_r0' class='data' style='color:red'>{value}</td><td><b>{value}</b></td></tr></table>")
    out = keep_values_whole(page)
    assert f'<td style="{NOWRAP}">{value}</td>' in out
    assert f"style='{NOWRAP};color:red'>{value}</td>" in out        # an existing style keeps its own rules
    assert "<td>two words</td>" in out and f"<td><b>{value}</b></td>" in out   # prose, markup: untouched
    assert re.sub(r'\s*style="white-space:nowrap"|white-space:nowrap;', "", out) == page
    # a long name with underscores may break there only, as in a wrap table; its cell is not made nowrap
    name = f"fp8_gemm_wrong_{rng.randrange(100)}"
    out = keep_values_whole(f"<table><tr><td>{name}</td></tr></table>")
    assert f"<td>{breakable(name)}</td>" in out and "<wbr>" in out


def test_pandas_tables_in_a_course_kernel_keep_their_values_whole():
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from rocmlab.course import table_style

    shell = InteractiveShell.instance()
    formatter = shell.display_formatter.formatters["text/html"]
    name = f"port-block-{random.Random().randrange(10**6)}"
    df = pd.DataFrame({"task": [name], "note": ["prose that wraps"]})
    before = shell.display_formatter.format(df)[0]["text/html"]
    assert f"<td>{name}</td>" in before                       # control: pandas' own table lets it break
    assert table_style.register(shell)
    try:
        for shown in (df, df.style.hide(axis="index")):
            page = shell.display_formatter.format(shown)[0]["text/html"]
            assert re.search(rf"<td[^>]*style=\"{NOWRAP}\"[^>]*>{name}</td>", page), page
            assert re.search(r"<td[^>]*(?<!nowrap\")>prose that wraps</td>", page), page
    finally:
        for module, cls in table_style.PANDAS_TABLES:
            formatter.deferred_printers.pop((module, cls), None)
        formatter.type_printers.pop(pd.DataFrame, None)
        from pandas.io.formats.style import Styler
        formatter.type_printers.pop(Styler, None)


def test_a_process_without_a_kernel_registers_nothing_and_imports_no_ipython():
    import subprocess
    import sys

    code = ("import sys, rocmlab.course as c; from rocmlab.course import table_style as t; "
            "print(t.register(), 'IPython' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out
