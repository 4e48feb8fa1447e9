"""A report in real JupyterLab (Chromium, Playwright): the cell shows its one-line progress summary and the
report as HTML (not Markdown), and hovering a citation shows the cited passage in a popover that is
really on screen (not clipped by the output area); a click keeps it open. Screenshots go to
/tmp/shad-screenshots/ (not committed). Needs /usr/bin/chromium, jupyterlab and playwright."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from _demo import DEMO

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path("/tmp/shad-screenshots")
GOAL = "What were the time and bean temp at first crack in the Ethiopia Yirgacheffe roast log batch?"
START = 180.0  # seconds: the machine is slow and shared

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        bool(os.environ.get("SHAD_SKIP_BROWSER"))
        or not CHROMIUM.exists()
        or any(importlib.util.find_spec(m) is None for m in ("jupyterlab", "playwright")),
        reason="needs /usr/bin/chromium, jupyterlab and playwright (and no SHAD_SKIP_BROWSER)",
    ),
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Lab:
    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.root.mkdir()
        shutil.copytree(DEMO, self.root / "vault", ignore=shutil.ignore_patterns("Shad"))
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext shad_magics"),
            nbformat.v4.new_code_cell(
                f"%%shad run --vault vault --provider offline --no-widget --no-cache\n{GOAL}"
            ),
        ]
        nbformat.write(nb, self.root / "report.ipynb")
        settings = base / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text(
            '{"fetchNews": "false", "checkForUpdates": false}'
        )
        self.port, self.token = _port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "SHAD_VAULT", "SHAD_CHECKPOINTS")
        }
        env.update(
            SHAD_HOME=str(base / "shad-home"),
            SHAD_STORE=str(base / "store.sqlite3"),
            PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
            JUPYTER_CONFIG_DIR=str(base / "jupyter-config"),
            JUPYTER_RUNTIME_DIR=str(base / "jupyter-runtime"),
            IPYTHONDIR=str(base / "ipython"),
        )
        self.log = base / "server.log"
        command = [
            sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
            "--port-retries=0", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
            f"--LabApp.user_settings_dir={base / 'settings'}", f"--LabApp.workspaces_dir={base / 'ws'}",
            "--allow-root",
        ]  # fmt: skip
        with self.log.open("wb") as out:
            self.server = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=self.root
            )

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"{self.url}{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=30) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START
        while True:
            assert self.server.poll() is None, self.log.read_text(errors="replace")[-3000:]
            try:
                self.api("/api/status")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert time.monotonic() < deadline, "JupyterLab did not answer"
                time.sleep(0.5)

    def idle(self) -> bool:
        sessions = [s for s in self.api("/api/sessions") if s.get("path", "").endswith("report.ipynb")]
        return bool(sessions) and sessions[0]["kernel"]["execution_state"] == "idle"

    def close(self) -> None:
        try:
            self.api("/api/shutdown", method="POST")
            self.server.wait(timeout=60)
        except (OSError, urllib.error.URLError, subprocess.TimeoutExpired):
            self.server.kill()
            self.server.wait(timeout=30)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    server = Lab(tmp_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.close()


def _until(condition: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def test_the_report_previews_its_citations_in_jupyterlab(lab: Lab) -> None:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(f"{lab.url}/lab/tree/report.ipynb?token={lab.token}")
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-CodeCell")
            _until(lab.idle, "the kernel to start", START)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            report = page.locator(".jp-OutputArea-output .shad-report")
            report.wait_for(state="visible", timeout=300_000)
            _until(lab.idle, "the run to end", 300)

            outputs = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")
            line = outputs.first.inner_text()
            assert re.match(r"Shad run \S+: SUCCESS · \d+/\d+ nodes", line), line  # the cell's own line
            assert (
                page.locator(".jp-Cell")
                .nth(1)
                .locator('[data-mime-type="application/vnd.jupyter.stderr"]')
                .count()
                == 0
            )
            cell = report.locator("table td", has_text="First crack").first  # a table, not bullets
            assert cell.evaluate("td => getComputedStyle(td).textAlign") == "left"  # our rules, not Lab's
            assert report.locator(".shad-callout--note").count() == 1  # the offline note as a box

            cite = report.locator(".shad-cite:not(.shad-cite--missing)").first
            cite.scroll_into_view_if_needed()
            pop = cite.locator(".shad-cite__pop")
            assert not pop.is_visible()
            cite.locator(".shad-cite__label").hover()
            pop.wait_for(state="visible", timeout=5000)
            assert len(pop.locator(".shad-cite__text").inner_text()) > 20
            box = pop.bounding_box()
            assert box is not None
            # On screen for real: the topmost element at the popover's middle is the popover itself, not
            # whatever the output area's overflow clipped it under.
            inside = page.evaluate(
                "([x, y]) => !!document.elementFromPoint(x, y)?.closest('.shad-cite__pop')",
                [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
            )
            assert inside, box
            page.screenshot(path=str(SHOTS / "lab-report-citation-hover.png"))
            cite.locator(".shad-cite__label").click()
            page.mouse.move(5, 5)
            assert pop.is_visible()  # a click keeps it open (focus), so its links can be clicked
            assert pop.locator("a", has_text="Open in Obsidian").count() == 1
            report.screenshot(path=str(SHOTS / "lab-report.png"))
        finally:
            browser.close()
