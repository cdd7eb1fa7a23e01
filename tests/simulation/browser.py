"""A web page as a person sees it: rendered by Debian's headless Chromium, measured (what
overflows its box, what wraps, what lies outside a chart) and photographed; and as a program
reads it (:class:`ParsedPage`: its tags and the text of each element with an id).

Chromium is installed with apt when it is missing and this is a root shell on Debian (CI's
machine is such a one; the page tests need it). A page is measured by a copy of it with a
script added at its end, which writes what it finds into the DOM that ``--dump-dom`` prints:
the page itself has no script.
"""

from __future__ import annotations

import fcntl
import html
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

#: What Chromium needs to run headless here: as root, on a machine with no network but the
#: package registries (without the last four it keeps trying to reach Google's hosts).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--no-proxy-server",
)
_INSTALL_LOCK = Path("/tmp/nodewright-chromium-install.lock")
_REPORT_ID = "layout-report"

#: Measures the page as laid out, into ``<pre id="layout-report">`` as JSON.
_MEASURE = """
<script>
(function () {
  const found = {overflowing: [], wrapped: [], outsideCharts: [], scrolling: []};
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.className && el.className.baseVal === undefined ? "." + el.className : "") +
    ": " + (el.textContent || "").trim().slice(0, 80);
  for (const el of document.querySelectorAll("main *")) {
    if (el instanceof SVGElement) continue;
    const style = getComputedStyle(el);
    if (style.display === "none") continue;
    if (el.classList.contains("scroll")) {
      if (el.scrollWidth > el.clientWidth + 1) found.scrolling.push(describe(el));
      continue;
    }
    if (style.overflowX !== "visible" && el.scrollWidth > el.clientWidth + 1) {
      found.overflowing.push(describe(el));
    }
    const box = el.getBoundingClientRect();
    const parent = el.closest(".scroll");
    if (!parent && box.right > document.documentElement.clientWidth + 1) {
      found.overflowing.push(describe(el));
    }
  }
  for (const el of document.querySelectorAll("td.name span, td.num, th")) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    if (lines.size > 1) found.wrapped.push(describe(el));
  }
  for (const svg of document.querySelectorAll("svg")) {
    const view = svg.viewBox.baseVal;
    for (const text of svg.querySelectorAll("text")) {
      const box = text.getBBox();
      const rotated = text.hasAttribute("transform");
      const [w, h] = rotated ? [box.height, box.width] : [box.width, box.height];
      const x = rotated ? Number(text.getAttribute("x")) - w / 2 : box.x;
      const y = rotated ? Number(text.getAttribute("y")) - h / 2 : box.y;
      if (x < view.x - 0.5 || y < view.y - 0.5 || x + w > view.x + view.width + 0.5 ||
          y + h > view.y + view.height + 0.5) {
        found.outsideCharts.push(svg.closest("figure").id + ": " + text.textContent);
      }
    }
  }
  found.pageWidth = document.documentElement.scrollWidth;
  found.viewWidth = document.documentElement.clientWidth;
  found.pageHeight = document.documentElement.scrollHeight;
  const pre = document.createElement("pre");
  pre.id = "%s";
  pre.textContent = JSON.stringify(found);
  document.body.appendChild(pre);
})();
</script>
""".replace("%s", _REPORT_ID)


class ChromiumMissing(RuntimeError):
    """Chromium is not installed and cannot be: the reason."""


def chromium() -> str:
    """The path of Debian's Chromium, installing it with apt first when it is missing."""
    found = shutil.which("chromium")
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise ChromiumMissing("chromium is not installed, and this is no root shell with apt-get")
    _INSTALL_LOCK.touch(exist_ok=True)
    with _INSTALL_LOCK.open() as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time on a shared machine
        if shutil.which("chromium") is None:
            environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for command in (
                ["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
            ):
                done = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    timeout=900,
                    env=environment,
                    check=False,
                )
                if done.returncode != 0:
                    raise ChromiumMissing(
                        f"{' '.join(command)} failed: {done.stderr.strip()[-400:]}"
                    )
    found = shutil.which("chromium")
    if found is None:
        raise ChromiumMissing("apt-get installed chromium, but it is not on PATH")
    return found


@dataclass
class Layout:
    """What the measuring script found, at one window width."""

    #: Elements whose content overflows their box, or that reach past the window's edge.
    overflowing: list[str]
    #: Names, figures and headings broken over two lines.
    wrapped: list[str]
    #: Chart text outside its chart.
    outside_charts: list[str]
    #: Tables too wide for the window (they scroll sideways).
    scrolling: list[str]
    page_width: int
    view_width: int
    page_height: int

    def problems(self) -> list[str]:
        return [
            *(f"overflows: {e}" for e in self.overflowing),
            *(f"wraps: {e}" for e in self.wrapped),
            *(f"outside its chart: {e}" for e in self.outside_charts),
            *(f"scrolls sideways: {e}" for e in self.scrolling),
            *(
                [f"the page is {self.page_width} px wide in a {self.view_width} px window"]
                if self.page_width > self.view_width
                else []
            ),
        ]


class Browser:
    """Headless Chromium with a fresh profile under ``workdir``."""

    def __init__(self, executable: str, workdir: Path) -> None:
        self.executable = executable
        self.workdir = workdir

    def _run(self, *arguments: str) -> str:
        profile = self.workdir / "profile"
        done = subprocess.run(
            [self.executable, *FLAGS, f"--user-data-dir={profile}", *arguments],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout

    def layout(self, page: Path, width: int) -> Layout:
        """Measure ``page`` laid out in a window ``width`` pixels wide."""
        measured = self.workdir / f"measured-{page.name}"
        text = page.read_text()
        measured.write_text(text.replace("</body>", _MEASURE + "</body>"))
        dom = self._run(f"--window-size={width},900", "--dump-dom", measured.as_uri())
        start = dom.index(f'<pre id="{_REPORT_ID}">') + len(f'<pre id="{_REPORT_ID}">')
        raw: dict[str, Any] = json.loads(_unescape(dom[start : dom.index("</pre>", start)]))
        return Layout(
            overflowing=raw["overflowing"],
            wrapped=raw["wrapped"],
            outside_charts=raw["outsideCharts"],
            scrolling=raw["scrolling"],
            page_width=raw["pageWidth"],
            view_width=raw["viewWidth"],
            page_height=raw["pageHeight"],
        )

    def screenshot(self, page: Path, shot: Path, width: int, height: int) -> None:
        """A PNG of ``page`` in a window of that size (the whole page when tall enough)."""
        self._run(f"--window-size={width},{height}", f"--screenshot={shot}", page.as_uri())


def browser_or_skip(workdir: Path) -> Browser:
    """Headless Chromium for a page test, or the test skipped, saying it was not checked."""
    try:
        return Browser(chromium(), workdir)
    except ChromiumMissing as missing:
        pytest.skip(f"NOT CHECKED IN A BROWSER: {missing}")


def assert_shown_whole(browser: Browser, page: Path, shot: Path) -> None:
    """Nothing on ``page`` overflows, wraps or leaves its chart at 1280 and 1600 px, and it
    renders to a PNG screenshot of the whole page at 1280 px."""
    for width in (1280, 1600):
        layout = browser.layout(page, width)
        assert layout.problems() == [], f"at {width} px"
    browser.screenshot(page, shot, 1280, layout.page_height)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000


class ParsedPage(HTMLParser):
    """Tags, their attributes, and the text of each element with an id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text_by_id: dict[str, str] = {}
        self._open: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if tag not in ("meta", "line", "path"):
            self._open.append(attributes.get("id"))
            if attributes.get("id"):
                self.text_by_id[attributes["id"]] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("meta", "line", "path") and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for open_id in self._open:
            if open_id:
                self.text_by_id[open_id] += data


def _unescape(text: str) -> str:
    return html.unescape(text)
