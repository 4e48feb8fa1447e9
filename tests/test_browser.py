"""The widgets in a real browser: JupyterLab serves the notebooks, Chromium (driven by Playwright) runs
all their cells. In the quickstart the explorer must draw one element per DAG node and show a clicked
node's task in its details panel; in a notebook whose run pauses at a checkpoint, the checkpoint widget
must appear, refuse a hint without text, and on Approve resume the run with the DAG widget following.

Slow (a Lab server, a kernel, a browser): deselect with ``-k "not browser"`` or set SHAD_SKIP_BROWSER=1.
Skipped with the reason when Chromium, JupyterLab or Playwright is missing. Screenshots go to
``tests/artifacts/browser/``.
"""

from __future__ import annotations

import contextlib
import http.client
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from _demo import DEMO

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "example_notebooks" / "quickstart.ipynb"
ARTIFACTS = REPO / "tests" / "artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START = 180.0  # seconds; the machine is slow and shared
RUN_ALL = 600.0
UI = 120_000  # milliseconds, for Playwright waits


def _skip_reason() -> str | None:
    if os.environ.get("SHAD_SKIP_BROWSER"):
        return "SHAD_SKIP_BROWSER is set"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    for module in ("jupyterlab", "playwright"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install {module})"
    return None


pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or ""),
]


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    notebook: str
    log: Path

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"{self.url}{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=30) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


def _notebook(root: Path) -> str:
    """The quickstart, outputs cleared, on the plain ``python3`` kernel: the notebook loads the magics
    itself, so the test does not depend on the ``shad`` kernelspec being installed here."""
    nb = nbformat.read(QUICKSTART, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "quickstart.ipynb")
    return "quickstart.ipynb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    root.mkdir()
    shutil.copytree(DEMO, root / "vault")
    notebook = _notebook(root)
    # Lab's news prompt would cover part of the page (and it would fetch from the internet).
    settings = base / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    token = secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "SHAD_VAULT")}
    env.update(
        SHAD_HOME=str(base / "shad-home"),
        SHAD_STORE=str(base / "store.sqlite3"),
        PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        JUPYTER_CONFIG_DIR=str(base / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(base / "jupyter-runtime"),
        IPYTHONDIR=str(base / "ipython"),
    )
    log = base / "server.log"
    # A free port may be taken again before the server binds it (a kernel of another test process picks
    # its ports at random): the server then exits, or the port answers with something other than HTTP.
    # Another port is tried then.
    for attempt in range(3):
        port = _free_port()
        command = [
            sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.open_browser=False",
            "--ip=127.0.0.1", f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={base / 'settings'}",
            f"--LabApp.workspaces_dir={base / 'workspaces'}", "--allow-root",
        ]  # fmt: skip
        with log.open("wb") as out:
            server = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
        lab = Lab(f"http://127.0.0.1:{port}", token, root, notebook, log)
        if _answers(server, lab):
            break
        _stop(server)
        if attempt == 2:
            pytest.fail(f"JupyterLab did not start on three ports:\n{lab.log_tail()}")
    try:
        yield lab
    finally:
        try:
            lab.api("/api/shutdown", method="POST")  # shuts kernels down too
            server.wait(timeout=60)
        except (OSError, urllib.error.URLError, http.client.HTTPException, subprocess.TimeoutExpired):
            _stop(server)


def _answers(server: subprocess.Popen[bytes], lab: Lab) -> bool:
    """Whether the server came up and its port answers as JupyterLab does; False when it exited or another
    program holds the port. Fails the test when it neither exits nor answers within ``SERVER_START``."""
    deadline = time.monotonic() + SERVER_START
    while True:
        if server.poll() is not None:
            return False
        try:
            return isinstance(lab.api("/api/status"), dict)
        except http.client.HTTPException:
            return False  # not HTTP: another program took the port
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {SERVER_START:.0f} s:\n{lab.log_tail()}")
            time.sleep(0.5)


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=30)


def _kernel_idle(lab: Lab, notebook: str | None = None) -> bool:
    name = notebook or lab.notebook
    sessions = [s for s in lab.api("/api/sessions") if s.get("path", "").endswith(name)]
    return bool(sessions) and sessions[0]["kernel"]["execution_state"] == "idle"


def _wait(condition: Any, what: str, timeout: float, lab: Lab) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{lab.log_tail()}")
        time.sleep(0.25)


def _dag(lab: Lab, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's DAG as the engine saved it (inside the vault, the default history location)."""
    found = list(lab.root.rglob(f"{run_id}/dag.json"))
    assert found, f"no history for run {run_id} under {lab.root}"
    return {n["id"]: n for n in json.loads(found[0].read_text())["nodes"]}


@contextlib.contextmanager
def _lab_page(lab: Lab, notebook: str, *, width: int = 1400, height: int = 1100) -> Iterator[Any]:
    """A Chromium page on ``notebook`` alone in Lab, its kernel started and Run All Cells clicked. When
    the block ends, the page must have fetched nothing from outside the Lab server and shown no widget
    error."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(UI)
            outside: list[str] = []
            page.on(
                "request",
                lambda r: None if r.url.startswith((lab.url, "blob:", "data:")) else outside.append(r.url),
            )
            # ?reset: only this notebook open (Lab would restore the tabs of an earlier test).
            page.goto(f"{lab.url}/lab/tree/{notebook}?reset&token={lab.token}")
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-CodeCell")
            assert page.locator(".jp-NotebookPanel").count() == 1
            _wait(lambda: _kernel_idle(lab, notebook), "the kernel to start", SERVER_START, lab)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            yield page
            assert "Error displaying widget" not in (page.locator(".jp-Notebook").text_content() or "")
            assert not outside, f"the page fetched from outside the Lab server: {outside}"
        finally:
            browser.close()


def test_quickstart_renders_the_explorer_in_jupyterlab(lab: Lab) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with _lab_page(lab, lab.notebook, height=1000) as page:
        prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt")

        def all_ran() -> bool:
            errors = page.locator('[data-mime-type="application/vnd.jupyter.stderr"]')
            texts = [t for t in errors.all_text_contents() if "Traceback" in t or "Error" in t]
            assert not texts, f"a cell failed:\n{texts[0][:3000]}"
            done = all(re.search(r"\[\d+\]", t) for t in prompts.all_text_contents())
            return done and _kernel_idle(lab)

        _wait(all_ran, "every cell to run", RUN_ALL, lab)

        explorers = page.locator(".shad-dag")
        page.wait_for_selector(".shad-dag .shad-dag__node")
        assert explorers.count() >= 1
        assert "Error displaying widget" not in (page.locator(".jp-Notebook").text_content() or "")
        run_id = (explorers.last.locator(".shad-dag__run-id").text_content() or "").strip()
        dag = _dag(lab, run_id)
        for i in range(explorers.count()):  # the live explorer of %%shad run, and DagExplorer(run)
            explorer = explorers.nth(i)
            assert (explorer.locator(".shad-dag__run-id").text_content() or "").strip() == run_id
            assert explorer.locator(".shad-dag__header .shad-dag__badge").text_content() == "SUCCESS"
            nodes = explorer.locator(".shad-dag__node")
            assert nodes.count() == len(dag)
            shown = {nodes.nth(j).get_attribute("data-node-id") for j in range(nodes.count())}
            assert shown == set(dag)
            statuses = {nodes.nth(j).get_attribute("data-status") for j in range(nodes.count())}
            assert statuses == {n["status"] for n in dag.values()}

        explorer = explorers.last
        explorer.scroll_into_view_if_needed()
        leaf_id = next(i for i, n in dag.items() if n["parent"] and n["retrieval"].get("context"))
        explorer.locator(f'.shad-dag__node[data-node-id="{leaf_id}"]').click()
        panel = explorer.locator(".shad-dag__details")
        panel.locator(".shad-dag__task").wait_for()
        assert panel.locator(".shad-dag__details-id").text_content() == leaf_id
        assert panel.locator(".shad-dag__task").text_content() == dag[leaf_id]["task"]
        assert panel.locator(".shad-dag__script code").count() >= 1  # its retrieval script
        assert panel.locator(".shad-dag__excerpt").count() == min(
            20, len(dag[leaf_id]["retrieval"]["context"])
        )
        selected = explorer.locator(".shad-dag__node--selected")
        assert selected.get_attribute("data-node-id") == leaf_id

        explorer.screenshot(path=str(ARTIFACTS / "quickstart.png"))
        page.screenshot(path=str(ARTIFACTS / "quickstart-page.png"), full_page=True)


# A high-impact question over a vault that cannot answer it: the run pauses at its root node.
CHECKPOINT_GOAL = "What is our authentication architecture for the payment API contract?"
COFFEE = {
    "Espresso.md": "# Espresso\n\nEspresso forces hot water through fine coffee at about 9 bar for 25 s.\n",
    "Pour over.md": "# Pour over\n\nPour-over uses water at 92 to 96 degrees over medium-fine grounds.\n",
    "Beans.md": "# Beans\n\nArabica grows at altitude; robusta carries more caffeine. Rest roasted beans.\n",
    # Something for retrieval to find, too little to answer on its own: the widget shows it.
    "Supplier payments.md": "# Supplier payments\n\nWe pay the green coffee supplier by bank transfer at "
    "the end of each month; the contract sets the price per kilo.\n",
}


def _checkpoint_notebook(root: Path, name: str, goal: str, options: str = "") -> str:
    """A notebook on the plain python3 kernel whose run pauses; no --checkpoints flag: ``auto`` must see
    that Lab lets a person answer (``allow_stdin``) and pause instead of failing."""
    vault = root / "coffee"
    vault.mkdir(exist_ok=True)
    for note, text in COFFEE.items():
        (vault / note).write_text(text)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext shad_magics"),
        nbformat.v4.new_code_cell(f"%%shad run --vault coffee --provider offline -o res {options}\n{goal}"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / name)
    return name


@contextlib.contextmanager
def _ran(lab: Lab, notebook: str) -> Iterator[Any]:
    """A Chromium page on ``notebook`` in Lab with every cell run (none failing); the page fetches
    nothing from outside the Lab server."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with _lab_page(lab, notebook) as page:
        prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt")

        def all_ran() -> bool:
            text = page.locator(".jp-Notebook").text_content() or ""
            assert "Traceback" not in text and "ShadRunError" not in text, text[-3000:]
            done = all(re.search(r"\[\d+\]", t) for t in prompts.all_text_contents())
            return done and _kernel_idle(lab, notebook)

        _wait(all_ran, "every cell to run", RUN_ALL, lab)
        yield page


def _until(page: Any, locator: Any, script: str) -> None:
    """Wait until ``script`` (a JS function of the element) holds for ``locator``'s element."""
    page.wait_for_function(script, arg=locator.element_handle())


def test_a_paused_run_shows_the_checkpoint_widget_and_approve_resumes_it(lab: Lab) -> None:
    notebook = _checkpoint_notebook(lab.root, "checkpoint.ipynb", CHECKPOINT_GOAL)
    with _ran(lab, notebook) as page:
        widget = page.locator(".shad-checkpoint")
        widget.wait_for()
        assert widget.count() == 1
        dag = page.locator(".shad-dag").last
        badge = dag.locator(".shad-dag__header .shad-dag__badge")
        assert badge.text_content() == "NEEDS_HUMAN"
        run_id = (dag.locator(".shad-dag__run-id").text_content() or "").strip()
        assert (widget.locator(".shad-checkpoint__run").text_content() or "").strip() == run_id
        assert widget.locator(".shad-checkpoint__node").text_content() == "root"
        assert widget.locator(".shad-checkpoint__task").text_content() == CHECKPOINT_GOAL
        why = widget.locator(".shad-checkpoint__why").text_content() or ""
        assert "retrieval" in why and "security" in why
        assert widget.locator('[data-signal="retrieval_score"]').count() == 1
        (saved,) = lab.root.rglob(f"{run_id}/checkpoints/root.json")
        found = json.loads(saved.read_text())["context"]
        excerpts = widget.locator(".shad-checkpoint__excerpt")
        assert excerpts.count() == len(found)
        for i, item in enumerate(found):
            assert excerpts.nth(i).locator(".shad-checkpoint__cite").text_content() == item["citation"]
        buttons = widget.locator(".shad-checkpoint__button")
        assert buttons.all_text_contents() == ["Approve", "Edit", "Hint", "Skip", "Stop"]
        assert all(buttons.nth(i).is_enabled() for i in range(5))
        widget.scroll_into_view_if_needed()
        widget.screenshot(path=str(ARTIFACTS / "checkpoint-waiting.png"))

        # A hint needs its text: said in the widget, and every button stays usable.
        widget.locator('.shad-checkpoint__button[data-action="hint"]').click()
        message = widget.locator(".shad-checkpoint__message")
        _until(page, message, "el => el.textContent.includes('hint needs its text')")
        _until(page, widget, "root => [...root.querySelectorAll('button')].every(b => !b.disabled)")

        widget.locator('.shad-checkpoint__button[data-action="approve"]').click()
        _until(page, badge, "el => ['SUCCESS', 'PARTIAL'].includes(el.textContent)")
        _until(page, widget.locator(".shad-checkpoint__state"), "el => el.textContent === 'run resumed'")
        assert (dag.locator(".shad-dag__run-id").text_content() or "").strip() == run_id  # the same run
        statuses = dag.locator(".shad-dag__node").evaluate_all("ns => ns.map(n => n.dataset.status)")
        assert "NEEDS_HUMAN" not in statuses
        assert all(buttons.nth(i).is_disabled() for i in range(5))
        assert "ended" in (message.text_content() or "")
        assert _dag(lab, run_id)["root"]["status"] == "SUCCEEDED"
        dag.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "checkpoint-resumed-page.png"), full_page=True)


# Under the research strategy: pauses at clarify_scope, then (approved) at two sources at once.
TWO_STEP_GOAL = (
    "What is our authentication architecture for the payment API contract, "
    "and what is our database schema for billing?"
)


def test_a_run_that_pauses_again_shows_new_checkpoint_widgets(lab: Lab) -> None:
    """The new widgets are made on the engine's thread when the resumed run pauses: they must render."""
    notebook = _checkpoint_notebook(lab.root, "pauses-again.ipynb", TWO_STEP_GOAL, "--strategy research")
    with _ran(lab, notebook) as page:
        widgets = page.locator(".shad-checkpoint")
        widgets.first.wait_for()
        assert widgets.count() == 1
        widgets.first.locator('.shad-checkpoint__button[data-action="approve"]').click()
        _until(
            page, page.locator(".jp-Notebook"), "el => el.querySelectorAll('.shad-checkpoint').length === 3"
        )
        # The new widgets are shown before the decided one says the run resumed (see _resumed).
        _until(
            page, widgets.first.locator(".shad-checkpoint__state"), "el => el.textContent === 'run resumed'"
        )
        nodes = {widgets.nth(i).locator(".shad-checkpoint__node").text_content() for i in (1, 2)}
        assert nodes == {"gather_sources", "gather_sources_2"}
        badge = page.locator(".shad-dag").last.locator(".shad-dag__header .shad-dag__badge")
        _until(page, badge, "el => el.textContent === 'NEEDS_HUMAN'")
        widgets.nth(1).locator('.shad-checkpoint__button[data-action="approve"]').click()
        _until(
            page,
            widgets.nth(1).locator(".shad-checkpoint__message"),
            "el => el.textContent.includes('other')",
        )
        assert badge.text_content() == "NEEDS_HUMAN"  # still waiting for the other one
        widgets.nth(2).locator(".shad-checkpoint__text").fill("billing schema")
        widgets.nth(2).locator('.shad-checkpoint__button[data-action="hint"]').click()
        _until(page, badge, "el => ['SUCCESS', 'PARTIAL'].includes(el.textContent)")
        for i in (1, 2):
            _until(
                page,
                widgets.nth(i).locator(".shad-checkpoint__state"),
                "el => el.textContent === 'run resumed'",
            )
        page.screenshot(path=str(ARTIFACTS / "checkpoint-paused-again-page.png"), full_page=True)
