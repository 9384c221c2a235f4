"""The doctor as a notebook widget: a table of checks, each with its fix, and a re-run button."""

from __future__ import annotations

from rocmlab.html_table import html_table
from rocmlab import doctor
from rocmlab.machine.detect import Probe, current, detect


def render_checks(checks) -> str:
    rows = [[c.status, c.name, c.message, c.fix if c.status in ("warn", "fail") else ""] for c in checks]
    return html_table(["status", "check", "finding", "fix"], rows, css_class="rocmlab-doctor", status_col=0)


def doctor_widget():
    """A VBox: the doctor table and a button that runs the checks again (after you fix something)."""
    import ipywidgets as w

    out = w.HTML()
    summary = w.HTML()
    button = w.Button(description="Run checks again", icon="refresh", layout=w.Layout(width="auto"))

    def refresh(_=None):
        probe = Probe()
        plat = detect(probe)
        current(refresh=True)
        checks = doctor.run_checks(probe, plat)
        counts = {s: sum(c.status == s for c in checks) for s in doctor.STATUSES}
        summary.value = (f"<b>{plat.summary()}</b><br>" + " · ".join(f"{n} {s}" for s, n in counts.items()))
        out.value = render_checks(checks)

    button.on_click(refresh)
    refresh()
    return w.VBox([summary, out, button])


def facts_html(plat=None) -> str:
    plat = plat or current()
    return html_table(["fact", "value"], [list(r) for r in plat.facts()], css_class="rocmlab-facts")
