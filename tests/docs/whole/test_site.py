"""The documentation site: built from the repository with warnings as errors and nitpicky references (so a
broken internal link, anchor or code reference fails the build), every internal link of the built HTML resolves,
and a real Chromium at 1280x800 reads it: the index, a lab, the CLI reference and the instructor guide fit the
page, code is highlighted, the search finds hipcc. Each check has a planted failing control."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.docs.links import broken_links
from tests.helpers.labharness import ARTIFACTS, CHROMIUM, NO_CHROMIUM, chromium

ROOT = Path(__file__).resolve().parents[3]
SPHINX = ROOT / ".venv-docs" / "bin" / "sphinx-build"
PAGES = {"index": "index.html", "lab": "learn/labs/01-hip-programming-model.html", "cli": "reference/cli.html",
         "guide": "teach/index.html"}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site as a reader builds it: ./go docs (scripts/docs.sh), into a temporary folder."""
    out = tmp_path_factory.mktemp("site") / "site"
    t0 = time.monotonic()
    done = subprocess.run(["bash", "scripts/docs.sh", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"the site does not build:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    (ARTIFACTS.parent / "docs").mkdir(parents=True, exist_ok=True)
    (ARTIFACTS.parent / "docs" / "build.txt").write_text(f"{time.monotonic() - t0:.0f} s\n{done.stdout}")
    return out


def _sphinx(src: Path, out: Path) -> subprocess.CompletedProcess:
    """The site's own configuration (docs/conf.py, -W -n) on a small source folder."""
    return subprocess.run([str(SPHINX), "-b", "html", "-W", "-n", "-q", "-c", str(ROOT / "docs"), str(src), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_site_builds_with_every_section_and_page(site):
    for section in ("learn", "setup", "teach", "reference", "develop", "results"):
        assert (site / section / "index.html").is_file(), section
    labs = sorted(p.stem for p in (ROOT / "labs").glob("[0-9]*.ipynb"))
    exercises = sorted(p.stem for p in (ROOT / "labs" / "exercises").glob("*.ipynb"))
    assert labs and exercises
    for stem in labs:
        assert (site / "learn" / "labs" / f"{stem}.html").is_file(), stem
    for stem in exercises:
        assert (site / "learn" / "labs" / "exercises" / f"{stem}.html").is_file(), stem


def test_generated_reference_pages_hold_what_the_code_says(site):
    from rocmlab import cli, settings
    from rocmlab.grader.spec import CHECK_TYPES

    env = (site / "reference" / "environment.html").read_text()
    assert all(v.name in env for v in settings.VARIABLES)
    cli_page = (site / "reference" / "cli.html").read_text()
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    for name, p in sub.choices.items():
        assert f'id="cli-rocmlab-{name}"' in cli_page, name
        for action in p._actions:
            for flag in action.option_strings:
                assert flag in cli_page, f"rocmlab {name} {flag}"
    kinds = (site / "reference" / "check-kinds.html").read_text()
    assert all(f">{k}<" in kinds for k in CHECK_TYPES)


def test_a_lab_page_shows_the_checked_outputs_it_stores(site):
    import nbformat

    nb = nbformat.read(ROOT / "labs" / "05-quickreduce-tuning.ipynb", as_version=4)
    texts = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert texts, "Lab 05 stores no checked output"
    page = (site / "learn" / "labs" / "05-quickreduce-tuning.html").read_text()
    import html
    first_line = next(line for t in texts for line in t.splitlines() if line.strip())
    assert html.escape(first_line.strip(), quote=False) in page


def test_every_internal_link_and_anchor_resolves(site):
    assert broken_links(site) == []


def test_control_a_planted_broken_link_is_found_by_the_walker(site, tmp_path):
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    page = copy / "teach" / "index.html"
    page.write_text(page.read_text().replace("</body>", '<a href="../setup/nowhere.html">x</a>'
                                             '<a href="../setup/index.html#no-such-anchor">y</a></body>'))
    found = broken_links(copy)
    assert "teach/index.html: ../setup/nowhere.html (no such file)" in found
    assert any("#no-such-anchor" in f and "no anchor" in f for f in found) and len(found) == 2


def test_control_a_broken_link_fails_the_build(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "other.md").write_text("# Other\n\n## A section\n")
    good = "# Index\n\n[ok](other.md) and [a section](other.md#a-section)\n\n```{toctree}\nother\n```\n"
    (src / "index.md").write_text(good)
    assert _sphinx(src, tmp_path / "ok").returncode == 0, "the control's clean copy must build"
    (src / "index.md").write_text(good + "\n[gone](no-such-page.md) and [nowhere](other.md#no-such-section)\n")
    bad = _sphinx(src, tmp_path / "bad")
    assert bad.returncode != 0
    assert "no-such-page" in bad.stderr and "no-such-section" in bad.stderr, bad.stderr[-2000:]


# ---- in a browser --------------------------------------------------------------------------------------------

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def server(site):
    """The built site over HTTP, as --serve gives it (search needs http:, not file:)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(ROOT / ".venv-docs" / "bin" / "python"), "-m", "http.server", str(port), "--bind",
                             "127.0.0.1", "--directory", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def page(server, tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium"), viewport=(1280, 800)) as ctx:
        p = ctx.new_page()
        yield p
        p.close()


def _overflow(page) -> dict:
    """How far the page is wider than the window, and the widest element that makes it so."""
    return page.evaluate("""() => {
        const doc = document.scrollingElement;
        let worst = null, right = doc.clientWidth;
        for (const el of document.body.querySelectorAll('*')) {
            const r = el.getBoundingClientRect();
            if (r.width && r.right > right + 1) { right = r.right; worst = el.tagName + '.' + el.className; }
        }
        return {extra: doc.scrollWidth - doc.clientWidth, worst};
    }""")


SHOTS = Path(os.environ.get("ROCMLAB_DOCS_SHOTS") or ARTIFACTS.parent / "docs")


@needs_chromium
@pytest.mark.parametrize("name", list(PAGES))
def test_a_page_fits_1280x800_and_its_code_is_highlighted(page, server, name):
    page.goto(f"{server}/{PAGES[name]}")
    page.wait_for_load_state("load")
    assert page.viewport_size == {"width": 1280, "height": 800}
    over = _overflow(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    assert over["extra"] <= 0, f"{PAGES[name]} is {over['extra']} px wider than the window ({over['worst']})"
    hidden = page.evaluate("""() => Array.from(document.querySelectorAll('pre'))
        .filter(e => e.scrollWidth > e.clientWidth + 1 && Math.max(...e.innerText.split('\\n').map(l => l.length)) <= 100)
        .map(e => e.innerText.slice(0, 80))""")
    assert hidden == [], f"{PAGES[name]}: code of lines up to 100 characters scrolls sideways: {hidden}"
    spans = page.evaluate("() => document.querySelectorAll('div.highlight pre span[class]').length")
    assert spans > 0, f"{PAGES[name]}: no highlighted code"
    colour = page.evaluate("() => getComputedStyle(document.querySelector('div.highlight pre span.k, "
                           "div.highlight pre span.nb, div.highlight pre span.c1, div.highlight pre span.s2, "
                           "div.highlight pre span.o, div.highlight pre span.nt')).color")
    plain = page.evaluate("() => getComputedStyle(document.querySelector('div.highlight pre')).color")
    assert colour != plain, f"{PAGES[name]}: code tokens have the plain text's colour {plain}"


@needs_chromium
def test_control_a_too_wide_element_is_found(page, server):
    page.goto(f"{server}/index.html")
    page.evaluate("() => { const d = document.createElement('div'); d.style.width = '3000px'; d.textContent = 'x';"
                  " document.querySelector('article').appendChild(d); }")
    assert _overflow(page)["extra"] > 0
    page.reload()
    assert _overflow(page)["extra"] <= 0


@needs_chromium
@pytest.mark.parametrize("word, found", [("hipcc", True), ("zqxjkvbwpl", False)])
def test_the_search_finds_hipcc(page, server, word, found):
    page.goto(f"{server}/search.html?q={word}")
    page.wait_for_function("() => { const s = document.querySelector('#search-results'); return s && "
                           "(s.querySelectorAll('li').length > 0 || /did not match|no documents|Search finished/i"
                           ".test(s.innerText)); }", timeout=30000)
    hits = page.evaluate("() => Array.from(document.querySelectorAll('#search-results li a')).map(a => a.href)")
    assert bool(hits) == found, hits[:5]
    if found:
        assert any("setup" in h or "learn" in h for h in hits), hits[:10]
