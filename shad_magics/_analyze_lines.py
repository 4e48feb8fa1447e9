"""``%shad analyze`` without a run id: the gap analysis of the vault(s) (``engine.curation``, the same as
``shad vault analyze``) as a pandas DataFrame, with a chart of the ranked gaps.

The DataFrame has one row per topic, ranked by gap score, with the columns ``COLUMNS``:

- ``topic``: the topic's most telling words; ``gap_score``: 0..1, higher is a bigger gap;
- ``history_pain``, ``coverage_miss``: 0..1; ``audit``: 0..1 from a model with ``--llm-audit`` (None
  when there was no audit);
- ``runs``: how many recorded runs asked about it; ``queries``: the queries across those runs (each
  distinct wording once per run);
- ``suggestion``: the first suggested addition;
- ``vault`` (only when several vaults were analysed).

``df.attrs["reports"]`` holds each vault's full report (``GapReport.to_dict()``: evidence, signals and
every suggestion). The chart is a stacked bar per topic (each score's weighted share of the gap) drawn
with matplotlib when it is installed, else the table styled with in-cell bars (a pandas ``Styler``).
The report note is written into each vault (``Shad/Reports/``) unless ``--no-write``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

from engine.curation import GAP_COLUMNS, GapReport, analyze_vault, write_gap_report

from ._errors import ShadUsageError

__all__ = ["COLUMNS", "chart", "chart_kind", "gap_analysis"]

COLUMNS = list(GAP_COLUMNS)
SCORES = ("history_pain", "coverage_miss", "audit")
COLOURS = {"history_pain": "#d9534f", "coverage_miss": "#f0ad4e", "audit": "#5bc0de"}


def chart_kind() -> str:
    """``matplotlib`` when it can be imported, else ``styler``."""
    return "matplotlib" if importlib.util.find_spec("matplotlib") is not None else "styler"


def gap_analysis(
    vaults: Sequence[str],
    *,
    llm_audit: bool = False,
    write: bool = True,
    top: int = 10,
    provider: str | None = None,
    display: Callable[[Any], None] | None = None,
) -> Any:
    """The ranked gaps of ``vaults`` as a DataFrame; the chart (and one line per vault on where the
    report went, or why there was nothing to analyse) go to ``display``/stdout."""
    import pandas as pd

    if top < 1:
        raise ShadUsageError(f"--top must be at least 1 (got {top})")
    reports: list[GapReport] = []
    rows: list[dict[str, Any]] = []
    for vault in vaults:
        report = analyze_vault(vault, llm_audit=llm_audit, top=top, provider=provider)
        if report.runs_analyzed and write:
            write_gap_report(report)
        reports.append(report)
        rows += [{**row, "vault": report.vault_id} for row in report.rows()]
        print(_line(report))
    columns = COLUMNS + (["vault"] if len(reports) > 1 else [])
    df = pd.DataFrame([{c: r[c] for c in columns} for r in rows], columns=columns)
    if len(reports) > 1:
        df = df.sort_values("gap_score", ascending=False, kind="stable").reset_index(drop=True)
    df.attrs["reports"] = [r.to_dict() for r in reports]
    if display is not None and not df.empty:
        display(chart(df, reports[0].weights))
    return df


def _line(report: GapReport) -> str:
    if not report.runs_analyzed:
        return report.message
    where = (
        f"report note: {report.vault}/{report.report_path}"
        if report.report_path
        else "no report note written"
    )
    counts = f"{report.runs_analyzed} run(s), {report.topics_total} topic(s)"
    return f"{report.vault_id}: {counts}. {report.weights_note}. {where}"


def _parts(row: Any, weights: dict[str, float]) -> dict[str, float]:
    """Each score's weighted share of the row's gap (a topic with no audit score: renormalised)."""
    wp, wc, wa = weights["history_pain"], weights["coverage_miss"], weights["audit"]
    audit = row["audit"]
    if audit is None or audit != audit:  # None, or NaN in a float column
        wp, wc, wa, audit = wp / (wp + wc), wc / (wp + wc), 0.0, 0.0
    return {
        "history_pain": wp * float(row["history_pain"]),
        "coverage_miss": wc * float(row["coverage_miss"]),
        "audit": wa * float(audit),
    }


def chart(df: Any, weights: dict[str, float]) -> Any:
    """A PNG image (matplotlib) or a ``Styler`` with bars (no matplotlib) of the ranked gaps."""
    if chart_kind() == "styler":
        return df.style.bar(subset=["gap_score", "history_pain", "coverage_miss"], vmin=0.0, vmax=1.0)
    import io

    from IPython.core.display import Image
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = [str(t) for t in df["topic"]][::-1]  # the biggest gap on top
    parts = [_parts(row, weights) for _, row in df.iterrows()][::-1]
    fig = Figure(figsize=(8, 1.2 + 0.45 * len(labels)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    left = [0.0] * len(labels)
    names = {"history_pain": "history pain", "coverage_miss": "coverage miss", "audit": "model audit"}
    for score in SCORES:
        widths = [p[score] for p in parts]
        if score == "audit" and not any(widths):
            continue
        ax.barh(labels, widths, left=left, color=COLOURS[score], label=names[score])
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlim(0, 1)
    ax.set_xlabel("gap score (weighted parts)")
    ax.set_title("Vault gaps, ranked")
    ax.legend(loc="lower right", fontsize="small")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    return Image(data=buffer.getvalue(), format="png")  # type: ignore[no-untyped-call]
