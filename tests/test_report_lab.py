"""A report in real JupyterLab (Chromium, Playwright): the cell shows its one-line progress summary and the
report as HTML (not Markdown), and hovering a citation shows the cited passage in a popover that is
really on screen (not clipped by the output area); a click keeps it open. Screenshots go to
/tmp/shad-screenshots/ (not committed). Needs /usr/bin/chromium, jupyterlab and playwright."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from test_browser import Lab, _kernel_idle, _lab_page, _skip_reason, _wait
from test_browser import lab as lab  # the module's JupyterLab server (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or ""),
]

SHOTS = Path("/tmp/shad-screenshots")
GOAL = "What were the time and bean temp at first crack in the Ethiopia Yirgacheffe roast log batch?"
RUN = 300.0  # seconds for the run to end: the machine is slow and shared


def _notebook(root: Path) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext shad_magics"),
        nbformat.v4.new_code_cell(
            f"%%shad run --vault vault --provider offline --no-widget --no-cache\n{GOAL}"
        ),
    ]
    nbformat.write(nb, root / "report.ipynb")
    return "report.ipynb"


def test_the_report_previews_its_citations_in_jupyterlab(lab: Lab) -> None:
    notebook = _notebook(lab.root)

    def idle() -> bool:
        return _kernel_idle(lab, notebook)

    SHOTS.mkdir(parents=True, exist_ok=True)
    with _lab_page(lab, notebook, width=1300, height=1000) as page:
        report = page.locator(".jp-OutputArea-output .shad-report")
        report.wait_for(state="visible", timeout=RUN * 1000)
        _wait(idle, "the run to end", RUN, lab)

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
