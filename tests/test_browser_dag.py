"""The DAG explorer at full size in a real browser (JupyterLab + Chromium via Playwright): a 30-node run
fits its widget's box when it loads (the root and every node inside it), a node's hover card shows its
whole task, and the Stop button cancels a running run, whose cell then ends PARTIAL in one line.

The 30 nodes come from a stand-in model (only the paid model API is replaced): the root's plan has five
subtasks with several asks each, and each of them is split into its asks (1 + 5 + 24 nodes); everything
else is the offline provider's work. A second run of the same model waits a few seconds per call, so it
is still running when Stop is pressed. Screenshots (light and dark theme) go to /tmp/shad-screenshots/.

Slow (a Lab server, a kernel, a browser): deselect with ``-k "not browser"`` or set SHAD_SKIP_BROWSER=1.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from test_browser import (
    RUN_ALL,
    Lab,
    _kernel_idle,
    _lab_page,
    _skip_reason,
    _wait,
)
from test_browser import lab as lab  # the module's JupyterLab server (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or ""),
]

SHOTS = Path("/tmp/shad-screenshots")
GOAL = "Compare the roasting and brewing choices that give better coffee at home, and list the sources."
SLOW_GOAL = "Compare the grinding and storage choices that keep coffee fresh at home, and list the sources."

# The stand-in model, defined in the notebook's first cell (the kernel cannot import tests/).
FAN_MODEL = '''
import asyncio
from engine.llm import LLMResponse, register
from engine.llm.offline import OfflineProvider

ASKS = {
    "roasting": ["what first crack is", "how long to rest beans", "how light roasts taste",
                 "what second crack means", "how to roast at home"],
    "grinding": ["which grind suits French press", "which grind suits espresso", "why burr grinders matter",
                 "how fines change taste", "how to clean a grinder"],
    "brewing": ["how pour over works", "how espresso pressure works", "how long to brew French press",
                "what bloom does", "how cold brew differs"],
    "water": ["what hardness suits brewing", "which temperature suits pour over", "why filtered water helps",
              "how minerals change extraction", "what ratio of water to coffee works"],
    "storage": ["how to store beans", "whether to freeze beans", "how long beans stay fresh",
                "which container keeps beans"],
}
WAIVERS = [{"stage": "frame_question", "reason": "the goal is clear"},
           {"stage": "analyze", "reason": "covered by the parts"}]


class Fan:
    """Plans 5 subtasks of several asks for the root and one part per ask below; the rest is offline."""

    name = "fan"
    delay = 0.0  # seconds per call: a slow model keeps a run going long enough to stop it

    def __init__(self):
        self.offline = OfflineProvider()

    async def complete(self, request):
        await asyncio.sleep(Fan.delay)
        if request.purpose == "decompose" and request.node_id == "root":
            nodes = [{"id": t, "task": f"Explain {', '.join(a[:-1])}, and {a[-1]}?",
                      "stage": "gather_evidence"} for t, a in ASKS.items()]
            return LLMResponse("", "fan", "fan-1", input_tokens=50, output_tokens=50,
                               data={"nodes": nodes, "waivers": WAIVERS})
        if request.purpose == "decompose":
            topic = request.node_id.split(".")[0]
            nodes = [{"id": f"part_{i + 1}", "task": f"Explain {a} ({topic}).", "stage": "part"}
                     for i, a in enumerate(ASKS[topic])]
            return LLMResponse("", "fan", "fan-1", input_tokens=40, output_tokens=40, data={"nodes": nodes})
        return await self.offline.complete(request)

    async def aclose(self):
        return None


register("fan", lambda **_: Fan())
'''


def _notebook(root: Path) -> str:
    nb = nbformat.v4.new_notebook()
    # The 30-node run spends about 130k tokens (the offline answers): within its budget, so it ends SUCCESS.
    run = "%%shad run --vault vault --provider fan --strategy analysis --max-tokens 200000"
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext shad_magics\n" + FAN_MODEL),
        nbformat.v4.new_code_cell(f"{run} -o big\n{GOAL}"),
        nbformat.v4.new_code_cell("Fan.delay = 4.0"),
        nbformat.v4.new_code_cell(f"{run} -o slow\n{SLOW_GOAL}"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "dag30.ipynb")
    return "dag30.ipynb"


def _history(lab: Lab, run_id: str) -> Path:
    found = list(lab.root.rglob(f"{run_id}/dag.json"))
    assert found, f"no history for run {run_id} under {lab.root}"
    return found[0].parent


def _outside(graph: Any, explorer: Any) -> list[str]:
    """The nodes (and the root) of an explorer whose box is not wholly inside its graph's box."""
    return list(
        graph.evaluate(
            """(g) => {
              const box = g.getBoundingClientRect();
              return [...g.querySelectorAll('.shad-dag__node')].filter((n) => {
                const r = n.getBoundingClientRect();
                return r.width === 0 || r.left < box.left - 0.5 || r.right > box.right + 0.5
                  || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5;
              }).map((n) => n.dataset.nodeId || n.dataset.group);
            }"""
        )
    )


def _hover_for_tip(node: Any, tip: Any) -> None:
    """Hover a node until its card shows: the notebook may still shift the graph under the pointer
    (another cell's run is growing), and a user would then move the mouse onto the node again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(4):
        node.hover()
        try:
            tip.wait_for(state="visible", timeout=10_000)
            return
        except PlaywrightTimeout:
            continue
    node.hover()
    tip.wait_for(state="visible")


def _dark_theme(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^JupyterLab Dark$")).click()
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")


def test_a_30_node_run_fits_shows_tasks_on_hover_and_stops(lab: Lab) -> None:
    notebook = _notebook(lab.root)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with _lab_page(lab, notebook) as page:
        # --- the finished 30-node run: fitted on load, full task on hover ----------------------------
        big = page.locator(".jp-CodeCell").nth(1).locator(".shad-dag")
        badge = big.locator(".shad-dag__header .shad-dag__badge")
        big.wait_for(timeout=RUN_ALL * 1000)
        page.wait_for_function(
            "(el) => el.textContent === 'SUCCESS'", arg=badge.element_handle(), timeout=RUN_ALL * 1000
        )
        run_id = (big.locator(".shad-dag__run-id").text_content() or "").strip()
        dag = {n["id"]: n for n in json.loads((_history(lab, run_id) / "dag.json").read_text())["nodes"]}
        assert len(dag) == 30
        big.scroll_into_view_if_needed()
        graph = big.locator(".shad-dag__graph")
        nodes = big.locator(".shad-dag__node")
        page.wait_for_function(
            "(g) => g.querySelectorAll('.shad-dag__node').length === 30", arg=graph.element_handle()
        )
        assert set(nodes.evaluate_all("ns => ns.map(n => n.dataset.nodeId)")) == set(dag)
        assert _outside(graph, big) == []
        assert big.locator('.shad-dag__node[data-node-id="root"]').is_visible()
        zoom = float(graph.get_attribute("data-zoom") or 0)
        assert zoom >= 0.45, zoom  # fitted, and still legible
        box = graph.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 1100  # the whole box on the screen

        leaf = "water.part_5"
        tip = big.locator(".shad-dag__tip")
        _hover_for_tip(big.locator(f'.shad-dag__node[data-node-id="{leaf}"]'), tip)
        assert tip.locator(".shad-dag__tip-task").text_content() == dag[leaf]["task"]
        assert tip.locator(".shad-dag__tip-id").text_content() == leaf
        root_task = dag["root"]["task"]
        big.locator('.shad-dag__node[data-node-id="root"]').hover()
        page.wait_for_function(
            "([t, want]) => t.querySelector('.shad-dag__tip-task').textContent === want",
            arg=[tip.element_handle(), root_task],
        )
        # The timeline has a row per node that ran, and the zoom buttons and Fit work.
        assert big.locator(".shad-dag__tl-row[data-node-id]").count() == 30
        big.locator('.shad-dag__tool[data-zoom="in"]').click()
        big.locator('.shad-dag__tool[data-zoom="in"]').click()
        assert float(graph.get_attribute("data-zoom") or 0) > zoom
        big.locator(".shad-dag__fit").click()
        assert float(graph.get_attribute("data-zoom") or 0) == pytest.approx(zoom, abs=0.002)
        assert _outside(graph, big) == []
        page.mouse.move(5, 5)
        tip.wait_for(state="hidden")
        big.screenshot(path=str(SHOTS / "dag-30-light.png"))

        # --- Stop: the slow run ends PARTIAL, its cell in one line ------------------------------------
        slow_cell = page.locator(".jp-CodeCell").nth(3)
        slow = slow_cell.locator(".shad-dag")
        stop = slow.locator(".shad-dag__stop")
        stop.wait_for(state="visible")
        page.wait_for_function(
            "(el) => el.querySelectorAll('.shad-dag__node').length >= 6", arg=slow.element_handle()
        )
        _dark_theme(page)
        big.scroll_into_view_if_needed()
        assert _outside(graph, big) == []
        big.screenshot(path=str(SHOTS / "dag-30-dark.png"))
        assert stop.is_visible(), "the slow run ended before Stop could be pressed"
        slow.scroll_into_view_if_needed()
        slow.screenshot(path=str(SHOTS / "dag-running-dark.png"))
        stop.click()
        slow_badge = slow.locator(".shad-dag__header .shad-dag__badge")
        page.wait_for_function("(el) => el.textContent === 'PARTIAL'", arg=slow_badge.element_handle())
        _wait(lambda: _kernel_idle(lab, notebook), "the stopped cell to end", RUN_ALL, lab)
        errors = slow_cell.locator('[data-mime-type="application/vnd.jupyter.stderr"]')
        errors.first.wait_for()
        text = "\n".join(errors.all_text_contents()).strip()
        slow_id = (slow.locator(".shad-dag__run-id").text_content() or "").strip()
        assert text.count("\n") == 0, text  # one line, no traceback
        assert "PARTIAL" in text and f"%shad resume {slow_id}" in text, text
        assert "Traceback" not in (slow_cell.text_content() or "")
        summary = json.loads((_history(lab, slow_id) / "final.summary.json").read_text())
        assert summary["status"] == "PARTIAL"
        assert not stop.is_visible()
        slow.screenshot(path=str(SHOTS / "dag-stopped-dark.png"))

        # --- Open report: the finished run's report in the side panel ------------------------------
        big.scroll_into_view_if_needed()
        big.locator(".shad-dag__open-report").click()
        report = big.locator(".shad-dag__report")
        report.wait_for()
        assert (big.locator(".shad-dag__report-path").text_content() or "").endswith("final.report.md")
        assert (report.text_content() or "").strip() == (
            _history(lab, run_id) / "final.report.md"
        ).read_text().strip()
