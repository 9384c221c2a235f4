"""Every internal link and anchor of a built HTML site resolves: a walker over the site's files."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key) and (key == "id" or tag == "a"):
                self.ids.add(a[key])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag in ("link", "script", "img") and (a.get("href") or a.get("src")):
            self.links.append(a.get("href") or a.get("src"))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def broken_links(site: Path) -> list[str]:
    """'page: href (why)' for each link between the site's own pages, files and anchors that does not resolve.
    Links off the site (http:, mailto:) are not followed: the build is offline."""
    site = site.resolve()
    pages = {p: _parse(p) for p in site.rglob("*.html")}
    broken = []
    for page, parsed in pages.items():
        for href in parsed.links:
            url = urlparse(href)
            if url.scheme or href.startswith("//"):
                continue
            target_part, anchor = urldefrag(href)
            target_part = urlparse(target_part).path            # ?v=... on the theme's files
            target = (page.parent / unquote(target_part)).resolve() if target_part else page
            if target.is_dir():
                target = target / "index.html"
            rel = page.relative_to(site)
            if not target.is_file() or site not in target.parents:
                broken.append(f"{rel}: {href} (no such file)")
                continue
            if anchor and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(anchor) not in ids:
                    broken.append(f"{rel}: {href} (no anchor #{anchor} in {target.relative_to(site)})")
    return broken
