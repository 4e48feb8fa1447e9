"""``%shad analyze`` in a real IPython ``InteractiveShell``: with a run id, that run's analysis (as before);
without one, the gap analysis of the session's vault as a DataFrame with documented columns, a chart, and
the report note written into the vault. Runs are recorded by ``%%shad run`` with the offline provider."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from _demo import DEMO
from _notebook_helpers import magics_of, magics_shell, ok
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from shad_magics import ShadUsageError, _analyze_lines
from shad_magics._args import parse_subcommand

pytestmark = pytest.mark.usefixtures("shad_home")

DOCUMENTED = ["topic", "gap_score", "history_pain", "coverage_miss", "audit", "runs", "queries", "suggestion"]
COFFEE = ("How long should I rest beans after roasting?", "Why do freshly roasted beans need to rest?")
TEA = ("How do I whisk matcha for a tea ceremony?", "What is the etiquette of a Japanese tea ceremony?")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(DEMO, copy)
    return copy


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vault: Path) -> Iterator[InteractiveShell]:
    yield from magics_shell(tmp_path, monkeypatch, vault)


def _record(sh: InteractiveShell) -> list[str]:
    ids = []
    for goal in (*COFFEE, *TEA):
        result = ok(sh.run_cell(f"%%shad run --no-widget --checkpoints approve\n{goal}"))
        ids.append(result.run_id)
    return ids


def test_the_documented_columns_match_the_engine() -> None:
    assert _analyze_lines.COLUMNS == DOCUMENTED


def test_gap_analysis_is_a_dataframe_with_a_chart_and_a_report_note(
    shell: InteractiveShell, vault: Path
) -> None:
    ids = _record(shell)
    with capture_output() as captured:
        df = ok(shell.run_cell("%shad analyze"))
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == DOCUMENTED
    assert len(df) == 2
    first, second = df.iloc[0], df.iloc[1]
    assert "tea" in first["topic"] or "matcha" in first["topic"]
    assert first["gap_score"] > second["gap_score"]
    assert first["runs"] == 2 and second["runs"] == 2
    assert first["suggestion"].startswith("a note on ")
    assert df["audit"].isna().all()
    assert df["gap_score"].between(0, 1).all() and df["queries"].ge(1).all()

    report = df.attrs["reports"][0]
    assert set(report["topics"][0]["evidence"]["runs"]) == set(ids[2:])  # the tea runs
    assert report["audit"] == "not requested"

    # the chart: a PNG drawn with matplotlib (installed with the dev extra), shown before the table
    assert _analyze_lines.chart_kind() == "matplotlib"
    assert any("image/png" in out.data for out in captured.outputs)
    rel = f"Shad/Reports/Vault analysis {dt.date.today().isoformat()}.md"
    assert (vault / rel).is_file()
    assert f"report note: {vault.resolve()}/{rel}" in captured.stdout

    # with a run id, the run's own analysis as before
    analysis = ok(shell.run_cell(f"%shad analyze {ids[0]}"))
    assert analysis.summary["status"] == "SUCCESS"


def test_llm_audit_offline_redistributes_and_no_write_writes_nothing(
    shell: InteractiveShell, vault: Path
) -> None:
    _record(shell)
    with capture_output() as captured:
        df = ok(shell.run_cell(f'%shad analyze --vault "{vault}" --llm-audit --no-write --top 1'))
    assert list(df.columns) == DOCUMENTED and len(df) == 1
    assert df["audit"].isna().all()
    flat = " ".join(captured.stdout.split())
    assert "no model: the audit weight 0.20 was redistributed to history pain and coverage" in flat
    assert "no report note written" in flat
    assert not (vault / "Shad" / "Reports").exists()
    assert df.attrs["reports"][0]["audit"] == "no model"


def test_a_vault_without_runs_gives_an_empty_frame_and_says_why(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    shutil.copytree(DEMO, empty)
    with capture_output() as captured:
        df = ok(shell.run_cell(f'%shad analyze --vault "{empty}"'))
    assert df.empty and list(df.columns) == DOCUMENTED
    assert "no runs recorded in" in captured.stdout
    assert not captured.outputs  # no chart of nothing


def test_usage_errors_raise(shell: InteractiveShell) -> None:
    bad = shell.run_cell("%shad analyze --top 0")
    assert isinstance(bad.error_in_exec, ShadUsageError)
    magics_of(shell).vault = []
    missing = shell.run_cell("%shad analyze")
    assert isinstance(missing.error_in_exec, ShadUsageError) and "no vault given" in str(
        missing.error_in_exec
    )


def test_the_styler_chart_when_matplotlib_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_analyze_lines, "chart_kind", lambda: "styler")
    df = pd.DataFrame(
        [{"topic": "tea", "gap_score": 0.6, "history_pain": 0.5, "coverage_miss": 0.9, "audit": None}]
    )
    styled = _analyze_lines.chart(df, {"history_pain": 0.6875, "coverage_miss": 0.3125, "audit": 0.0})
    assert type(styled).__name__ == "Styler" and "background" in styled.to_html()


def test_arguments() -> None:
    assert parse_subcommand("analyze R")[1].run_id == "R"
    ns = parse_subcommand("analyze --vault A --vault B --llm-audit --no-write --top 3")[1]
    assert ns.run_id is None and ns.vault == ["A", "B"] and ns.llm_audit and ns.no_write and ns.top == 3
    plain = parse_subcommand("analyze")[1]
    assert plain.run_id is None and plain.vault == [] and not plain.llm_audit and plain.top == 10
