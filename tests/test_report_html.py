"""Reports as HTML in notebooks (``shad_magics._report_html``): Obsidian callouts as styled boxes, tables as
tables, embeds as the embedded text, each citation with its cited passage in a popover (hover or click)
and the Obsidian link as its second action; CSS from a file, scoped; a note's HTML never runs. The last
test opens a real run's report in Chromium (Playwright), hovers and clicks citations and sees the
passages; its screenshots go to /tmp/shad-screenshots/ (not committed)."""

from __future__ import annotations

import importlib.util
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

import engine
from shad_magics import ShadResult
from shad_magics._report_html import CSS_FILE, Sources, render_report
from shad_magics._result import vault_roots

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path("/tmp/shad-screenshots")
ROAST_GOAL = "What were the time and bean temp at first crack in the Ethiopia Yirgacheffe roast log batch?"


def links(root: Path) -> Callable[[Any], tuple[str, str] | None]:
    def link(cite: Any) -> tuple[str, str] | None:
        note = root / (cite.path + ".md")
        return (f"obsidian://open?file={cite.path}", note.as_uri()) if note.is_file() else None

    return link


def render(markdown: str, vault: Path) -> str:
    return render_report(markdown, Sources(None, {"v": vault}, links(vault)), "r1")


@pytest.fixture
def vault(make_vault: Callable[..., Path]) -> Path:
    return make_vault(
        {
            "Roast log.md": "# Roast log\n\n## Batch 1\n\n| Event | Time |\n| --- | --- |\n"
            "| First crack | 7:20 |\n| Drop | 9:10 |\n\n## Notes\n\n"
            "First crack came early <script>x()</script>.\n",
            "Water.md": "# Water\n\n## Hardness\n\nHard water scales the boiler; soft water tastes flat.\n",
        }
    )


def test_a_callout_is_a_styled_box_with_its_title_and_body(vault: Path) -> None:
    page = render("> [!warning] Check the water\n> Hard water **scales** the boiler.\n\nAfter.", vault)
    box = re.search(r'<div class="shad-callout shad-callout--warning">(.*?)</div>\s*<p>After', page, re.S)
    assert box is not None, page
    assert "Check the water</span>" in box.group(1) and "<strong>scales</strong>" in box.group(1)
    assert "[!warning]" not in page
    folded = render("> [!tip]- Folded\n> hidden until opened", vault)
    assert '<details class="shad-callout shad-callout--tip"><summary>' in folded


def test_a_table_stays_a_table_and_its_citations_preview(vault: Path) -> None:
    page = render(
        "| Event | Time | source |\n| --- | --- | --- |\n| First crack | 7:20 | [[Roast log#Batch 1]] |",
        vault,
    )
    assert (
        "<table>" in page and "<td>First crack</td>" in page and "<li>" not in page.split("shad-sources")[0]
    )
    assert "<mark>First crack | 7:20</mark>" in page  # the row is found in the cited table


def test_an_embed_shows_the_embedded_section(vault: Path) -> None:
    page = render("Before.\n\n![[Water#Hardness]]\n\nAfter.", vault)
    embed = re.search(r'<div class="shad-embed">(.*?)</div>\s*<p>After', page, re.S)
    assert embed is not None and "Hard water scales the boiler" in embed.group(1)
    assert "![[" not in page.split("</style>")[1]
    missing = render("![[Nowhere#Nothing]]", vault)
    assert 'shad-embed--missing">Nowhere#Nothing</p>' in missing


def test_a_citation_carries_its_passage_and_the_obsidian_link_second(vault: Path) -> None:
    page = render("- First crack came early. [[Roast log#Notes]]", vault)
    cite = re.search(r'<span class="shad-cite" tabindex="0">(.*?)</span></span></span>', page, re.S)
    assert cite is not None
    inner = cite.group(1)
    assert inner.index("shad-cite__label") < inner.index("shad-cite__pop")  # the name, then the preview
    assert "<mark>First crack came early</mark>" in inner
    assert '<a href="obsidian://open?file=Roast log">Open in Obsidian</a>' in inner  # the second action
    assert 'id="shad-fn-r1-1"' in page and "Roast log › Notes" in page  # the expandable footnote
    assert "<script>" not in page and "&lt;script&gt;" in page  # a note's HTML is text, never run


def test_code_is_left_alone(vault: Path) -> None:
    page = render("Write `[[Roast log]]` or\n\n```\n> [!note] not a callout\n```", vault)
    assert "shad-cite" not in page.split("</style>")[1] and "shad-callout" not in page.split("</style>")[1]


def test_every_css_rule_is_scoped_and_nothing_is_fetched() -> None:
    css = re.sub(r"/\*.*?\*/", "", CSS_FILE.read_text(encoding="utf-8"), flags=re.S)
    selectors = [s.strip() for block in re.findall(r"([^{}]+)\{", css) for s in block.split(",")]
    assert len(selectors) > 20 and all(s.startswith(".shad-report") for s in selectors), selectors
    assert "url(" not in css and "@import" not in css


def _real_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ShadResult:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    vault = shutil.copytree(DEMO, tmp_path / "vault", ignore=shutil.ignore_patterns("Shad"))
    run = engine.run(ROAST_GOAL, str(vault), provider="offline", use_cache=False)
    return ShadResult(run)


def test_a_real_offline_report_renders_its_table_rows_as_a_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _real_report(tmp_path, monkeypatch)
    assert re.search(r"^\| First crack \| 7:20 \| 196 °C \| \[\[", result.report, re.M), result.report
    assert not re.search(r"^- \|", result.report, re.M)  # no table-row fragments as bullets
    page = result.html
    assert "<td>First crack</td>" in page and "196 °C" in page
    assert "shad-callout--note" in page  # the offline provider's note is a callout box
    assert result._repr_mimebundle_()[0]["text/html"] == page
    assert vault_roots(result.run.config.vaults)


@pytest.mark.browser
@pytest.mark.skipif(
    not CHROMIUM.exists() or importlib.util.find_spec("playwright") is None,
    reason="needs /usr/bin/chromium and playwright",
)
def test_chromium_shows_the_cited_passage_on_hover_and_on_click(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import sync_playwright

    result = _real_report(tmp_path, monkeypatch)
    page_file = tmp_path / "report.html"
    page_file.write_text(
        f"<!doctype html><meta charset='utf-8'><body style='margin:24px'>{result.html}</body>", "utf-8"
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.route(re.compile(r"^(?!file:).*"), lambda route: route.abort())  # no network at all
            page.goto(page_file.as_uri())
            cites = page.locator(".shad-report .shad-cite:not(.shad-cite--missing)")
            assert cites.count() >= 2
            first, pop = cites.nth(0), cites.nth(0).locator(".shad-cite__pop")
            assert not pop.is_visible()  # hidden until asked for
            first.locator(".shad-cite__label").hover()
            pop.wait_for(state="visible", timeout=5000)
            passage = pop.locator(".shad-cite__text").inner_text()
            assert len(passage) > 20 and pop.locator("a", has_text="Open in Obsidian").count() == 1
            page.screenshot(path=str(SHOTS / "report-citation-hover.png"))
            page.mouse.move(1090, 890)  # away: the popover closes
            pop.wait_for(state="hidden", timeout=5000)
            table_cite = page.locator(".shad-report td .shad-cite").first
            table_cite.locator(".shad-cite__label").click()  # a click keeps it open (focus)
            table_pop = table_cite.locator(".shad-cite__pop")
            table_pop.wait_for(state="visible", timeout=5000)
            assert "196 °C" in table_pop.inner_text()
            page.mouse.move(1090, 890)
            assert table_pop.is_visible()  # still open while it has the focus
            page.screenshot(path=str(SHOTS / "report-citation-click.png"))
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            table_pop.wait_for(state="hidden", timeout=5000)  # focus gone: closed again
            callout = page.locator(".shad-report .shad-callout").first
            callout.screenshot(path=str(SHOTS / "report-callout.png"))
            page.screenshot(path=str(SHOTS / "report-page.png"), full_page=True)
            # An untrusted notebook: JupyterLab's sanitizer drops the <style>. The previews stay hidden,
            # and the plain "Cited passages" list still opens each passage on a click.
            bare = re.sub(r"<style>.*?</style>", "", result.html, flags=re.S)
            page.set_content(f"<!doctype html><meta charset='utf-8'><body>{bare}</body>")
            assert page.locator(".shad-cite__pop").count() > 0
            assert not any(p.is_visible() for p in page.locator(".shad-cite__pop").all())
            page.locator(".shad-sources summary").first.click()
            assert "196 °C" in page.locator(".shad-sources blockquote").first.inner_text()
            page.goto(page_file.as_uri())
            # JupyterLab's dark theme sets these variables: the report follows them.
            page.evaluate(
                """() => { const s = document.body.style; s.background = '#111';
                for (const [k, v] of [['--jp-layout-color0', '#111'], ['--jp-layout-color1', '#222'],
                  ['--jp-content-font-color1', '#eee'], ['--jp-content-font-color2', '#aaa'],
                  ['--jp-border-color1', '#555'], ['--jp-brand-color1', '#6cb6ff']]) s.setProperty(k, v); }"""
            )
            first.locator(".shad-cite__label").hover()
            pop.wait_for(state="visible", timeout=5000)
            assert pop.evaluate("p => getComputedStyle(p).backgroundColor") == "rgb(17, 17, 17)"
            link = page.locator(".shad-report .shad-sources a").first
            assert link.evaluate("a => getComputedStyle(a).color") == "rgb(108, 182, 255)"  # readable on dark
            page.screenshot(path=str(SHOTS / "report-citation-hover-dark.png"))
        finally:
            browser.close()
