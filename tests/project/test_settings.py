"""rocmlab.settings: precedence (CLI > exercise spec > settings) and the time-limit validator."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from rocmlab import grader, settings
from rocmlab.grader.checks import Context, run_time_limit
from rocmlab.grader.spec import CheckSpec


def _ctx(limit):
    return Context(grader.load("vector-add"), "", None, 1, time_limit_s=limit)


def test_resolve_takes_the_first_value_given():
    a, b = random.uniform(1, 50), random.uniform(1, 50)
    assert settings.resolve(a, b, default=7) == a
    assert settings.resolve(None, b, default=7) == b
    assert settings.resolve(None, None, default=7) == 7
    assert settings.resolve(0, b, default=7) == 0          # a given 0 is a value, not "missing"


def test_run_limit_precedence_cli_then_spec_then_settings():
    cli, spec_s = random.randint(2, 30), random.randint(31, 60)
    with_spec = CheckSpec("runs", "run", 1.0, options={"timeout_s": spec_s})
    without = CheckSpec("runs", "run", 1.0, options={})
    assert run_time_limit(_ctx(cli), with_spec) == cli                       # the instructor's flag wins
    assert run_time_limit(_ctx(None), with_spec) == spec_s                   # then the exercise's spec
    assert run_time_limit(_ctx(None), without) == settings.RUN_TIME_LIMIT_S  # then settings


@pytest.mark.parametrize("bad", ["abc", "nan", "inf", "-1", "0", "1e308"])
def test_time_limit_rejects_bad_values_with_the_fix(bad):
    with pytest.raises(ValueError, match="seconds|maximum"):
        settings.time_limit(bad)


def test_time_limit_control_accepts_a_good_value():
    v = random.uniform(0.5, 100)
    assert settings.time_limit(str(v)) == pytest.approx(v)


def test_grader_check_rejects_a_bad_cli_limit():
    with pytest.raises(ValueError, match="not a number"):
        grader.check("vector-add", "int main() {}", time_limit_s="abc")


@pytest.mark.parametrize("bad", ["nan", "inf", "-1", "abc", "1e308"])
def test_grade_cli_rejects_a_bad_time_limit_with_exit_2(bad, tmp_path, capsys):
    from rocmlab.cli import main

    with pytest.raises(SystemExit) as e:
        main(["grade", str(tmp_path), "--exercise", "vector-add", "--time-limit", bad])
    assert e.value.code == 2 and "--time-limit" in capsys.readouterr().err


def test_grade_cli_control_a_good_time_limit_parses(tmp_path, capsys):
    from rocmlab.cli import main

    (tmp_path / "ada.hip").write_text("")      # an empty hand-in: graded (not run), the CLI exits normally
    rc = main(["grade", str(tmp_path), "--exercise", "vector-add", "--time-limit", "3", "--out",
               str(tmp_path / "out"), "--no-progress"])
    assert rc == 0 and (tmp_path / "out" / "grades.csv").exists()


ENV_NAME = re.compile(r"\bROCMLAB_[A-Z][A-Z0-9_]*\b")
#: Names that are not environment variables: a header guard of the port's shims.
NOT_VARIABLES = {"ROCMLAB_PORT_CG_OPS"}


def variables_named(paths_) -> dict[str, str]:
    """Every ROCMLAB_* name written in these files (name -> first file)."""
    out: dict[str, str] = {}
    for p in paths_:
        for name in ENV_NAME.findall(p.read_text(encoding="utf-8", errors="replace")):
            out.setdefault(name, str(p))
    return out


def project_files() -> list[Path]:
    root = Path(__file__).resolve().parents[2]
    files = [root / "go", *root.glob(".ci/*"), *root.glob("scripts/**/*.sh"), *root.glob("binder/**/*")]
    files += [p for p in (root / "rocmlab").rglob("*") if p.suffix in (".py", ".h", ".hip", ".cu", ".yaml")]
    files += list((root / "labs").rglob("*.ipynb"))
    return [p for p in files if p.is_file()]


def test_every_rocmlab_variable_is_listed_with_its_meaning():
    listed = {v.name for v in settings.VARIABLES}
    named = variables_named(project_files())
    missing = {n: f for n, f in named.items() if n not in listed and n not in NOT_VARIABLES}
    assert not missing, f"add these to rocmlab.settings.VARIABLES with their meaning: {missing}"
    assert all(v.meaning for v in settings.VARIABLES)


def test_control_an_unlisted_variable_is_found(tmp_path):
    name = "ROCMLAB_" + "".join(random.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(8))
    f = tmp_path / "x.py"
    f.write_text(f'import os\nvalue = os.environ.get("{name}")\n')
    named = variables_named([f])
    assert name in named and name not in {v.name for v in settings.VARIABLES}
    with pytest.raises(KeyError, match="not a rocmlab variable"):
        settings.env(name)


def test_the_documentation_generates_the_variables_table():
    """The site's Environment variables page is generated from VARIABLES when it is built (never pasted; a pasted
    copy anywhere fails tests/docs/test_reference_tables.py)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "environment.rst").read_text(encoding="utf-8")
    assert ".. rocmlab-env::" in page


def test_doctor_env_prints_each_variable_and_its_value(monkeypatch, capsys):
    from rocmlab.cli import main

    monkeypatch.setenv("ROCMLAB_QUICK", "1")
    monkeypatch.delenv("ROCMLAB_SERVE_URL", raising=False)
    assert main(["doctor", "--env"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(" `"): line for line in out.splitlines()[2:]}
    assert set(rows) == {v.name for v in settings.VARIABLES}
    assert rows["ROCMLAB_QUICK"].rstrip(" |").endswith("`1`") and "(unset)" in rows["ROCMLAB_SERVE_URL"]


def test_a_reader_that_goes_away_is_not_a_crash():
    """`rocmlab doctor --env | head -1`: the pipe closes early; no traceback, exit 0."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "rocmlab.cli", "doctor", "--env"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()                                  # the reader is gone before the table is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in err, err
