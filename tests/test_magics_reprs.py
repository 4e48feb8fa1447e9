"""How a run's parts and search results show in a notebook (``shad_magics._reprs``): ``r.dag`` (still a
networkx graph), ``r.citations`` (still a list), ``r.metrics`` and ``%shad search`` (still DataFrames)
render as HTML tables: whole tasks and snippets, notes as links, "—" for a missing heading, never ``NaN``.
Asserted on the mime bundles IPython's own formatter makes, in a real ``InteractiveShell`` and in a real
kernel (nbclient), with the offline provider on the demo vault."""

from __future__ import annotations

import html
import json
import os
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import networkx as nx
import pandas as pd
import pytest
from _demo import DEMO
from _notebook_helpers import execute_notebook, magics_shell, ok
from IPython.core.interactiveshell import InteractiveShell

from shad_magics import ShadResult
from shad_magics._reprs import Citations

REPO = Path(__file__).resolve().parents[1]
GOAL = "How long should roasted beans rest before brewing? What grind size suits a French press?"
HEX64 = r"[0-9a-f]{64}"


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    yield from magics_shell(tmp_path, monkeypatch, DEMO)


@pytest.fixture
def result(shell: InteractiveShell) -> ShadResult:
    ok(shell.run_cell(f"%%shad run -o r --no-widget --checkpoints off\n{GOAL}"))
    res: ShadResult = shell.user_ns["r"]
    assert len(res.run.dag) >= 4 and res.citations
    return res


def bundle(shell: InteractiveShell, obj: Any) -> dict[str, Any]:
    """What a notebook gets for ``obj`` as a cell's value: IPython's formatter, mime type -> data."""
    data, _ = shell.display_formatter.format(obj)
    return dict(data)


def cells_of(page: str) -> str:
    return page.replace("\n", " ")


# --- the DAG ------------------------------------------------------------------------------------------------


def test_dag_is_still_a_networkx_graph_and_shows_as_a_table(
    shell: InteractiveShell, result: ShadResult
) -> None:
    graph = result.dag
    assert isinstance(graph, nx.DiGraph) and graph.graph["run_id"] == result.run_id
    assert next(iter(nx.topological_sort(graph))) == "root"
    for node in result.run.dag:
        assert graph.nodes[node.id]["status"] == node.status.value
    shown = bundle(shell, graph)
    assert "at 0x" not in shown["text/plain"] and "DiGraph" not in shown["text/plain"]
    assert shown["text/plain"].startswith(f"<RunGraph of run {result.run_id}: {len(result.run.dag)} nodes")
    page = shown["text/html"]
    assert f"<code>{result.run_id}</code>" in page and "SUCCEEDED" in page
    rows = page.split("<tr>")[2:]  # after the header row: one row per node, parents first
    assert len(rows) == len(result.run.dag) and "<code>root</code>" in rows[0]
    for node in result.run.dag:
        assert html.escape(node.task) in page, node.task  # the whole task, escaped
    for copy in (graph.copy(), pickle.loads(pickle.dumps(graph))):  # a copy is the same kind of graph
        assert type(copy) is type(graph) and set(copy.nodes) == set(graph.nodes)
        assert "text/html" in bundle(shell, copy)


# --- citations ----------------------------------------------------------------------------------------------


def test_citations_are_still_a_list_and_show_as_clickable_notes(
    shell: InteractiveShell, result: ShadResult
) -> None:
    citations = result.citations
    assert isinstance(citations, list) and json.loads(json.dumps(citations)) == list(citations)
    page = bundle(shell, citations)["text/html"]
    assert f"{len(citations)} citations" in page
    for c in citations:
        assert c["uri"].startswith("obsidian://open?") and c["file"].startswith("file://")
        label = html.escape(c["path"].removesuffix(".md"))
        assert f'<a href="{html.escape(c["uri"])}" title="Open in Obsidian">{label}</a>' in page
        assert f'<a href="{html.escape(c["file"])}" title="Open the file">↗</a>' in page
        assert html.escape(c["heading"] or "—") in page  # a whole-note citation shows a dash
    assert "None" not in page and "NaN" not in page


def test_a_citation_without_a_note_or_heading_shows_a_dash_and_no_link() -> None:
    page = Citations([{"vault": "v", "path": "Gone.md", "heading": None, "block": None, "resolved": False}])
    shown = page._repr_html_()
    assert "<a " not in shown and "Gone" in shown and "⚠ unresolved" in shown and "—" in shown
    assert "None" not in shown and "1 citation<" in shown


# --- metrics ------------------------------------------------------------------------------------------------


def test_metrics_are_the_same_dataframe_shown_with_readable_columns(
    shell: InteractiveShell, result: ShadResult
) -> None:
    metrics = result.metrics
    assert isinstance(metrics, pd.DataFrame)
    pd.testing.assert_frame_equal(pd.DataFrame(metrics), result.run.metrics_frame())
    assert type(metrics.head(2)) is pd.DataFrame  # what derives from it is a plain frame
    page = bundle(shell, metrics)["text/html"]
    header = page.split("</thead>")[0]
    assert "min-width:22em" in header.split(">task<")[0].rsplit("<th", 1)[1]  # the task wraps, never narrow
    for column in ("node", "status", "task", "tokens", "model calls", "time (s)", "retrieval", "citations"):
        assert f">{column}</th>" in header, column
    for task in metrics["task"]:
        assert html.escape(task) in page
    assert not any(key in page for key in metrics["cache_key"] if key)  # no 64-character keys beside it
    assert "also in the DataFrame: run_id, parent, depth, cache_key" in page
    assert "NaN" not in page and "None" not in page and "..." not in page
    analysis = shell.run_line_magic("shad", f"analyze {result.run_id}")
    shown = bundle(shell, analysis)["text/html"]
    assert all(html.escape(task) in shown for task in metrics["task"]) and "NaN" not in shown


# --- search -------------------------------------------------------------------------------------------------


def test_search_shows_whole_snippets_links_and_a_dash_for_no_heading(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "my notes"
    notes.mkdir()
    long = (
        "The kettle is descaled monthly with citric acid, rinsed three times, and then boiled empty once "
        "so that no sour taste reaches the next pour-over."
    )
    (notes / "Kettle.md").write_text(long + "\n", encoding="utf-8")  # no heading at all
    frame = shell.run_line_magic("shad", f'search descaled citric --vault "{notes}"')
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["path", "title", "heading", "score", "snippet", "vault"]
    assert list(frame["path"]) == ["Kettle.md"] and list(frame["heading"]) == [""]
    assert frame.iloc[0]["snippet"].endswith("pour-over.") and len(frame.iloc[0]["snippet"]) > 100
    page = bundle(shell, frame)["text/html"]
    assert html.escape(frame.iloc[0]["snippet"]) in page  # whole, not cut at ~50 characters
    assert "NaN" not in page and "None" not in page and ">—</td>" in page
    file_uri = (notes / "Kettle.md").as_uri()
    assert f'href="{html.escape(file_uri)}"' in page and 'href="obsidian://open?vault=my%20notes' in page
    assert "1 hit for <i>descaled citric</i>" in page
    monkeypatch.chdir(tmp_path)  # a vault given relative to the working folder links the same
    relative = bundle(shell, shell.run_line_magic("shad", 'search descaled citric --vault "my notes"'))
    assert f'href="{html.escape(file_uri)}"' in relative["text/html"]

    java = shell.run_line_magic("shad", "search java")  # no demo note says "java": its synonym is searched
    assert java.attrs["synonyms"] == {"java": ["coffee"]} and len(java)
    assert "no note holds <i>java</i>: also searched for coffee" in bundle(shell, java)["text/html"]

    demo = shell.run_line_magic("shad", "search rest beans after roasting --limit 5")
    page = bundle(shell, demo)["text/html"]
    for snippet in demo["snippet"]:
        assert html.escape(snippet) in page
    assert "NaN" not in page and "..." not in page


# --- in a real kernel ---------------------------------------------------------------------------------------


def test_in_a_real_kernel_each_part_displays_as_html(tmp_path: Path) -> None:
    vault = shutil.copytree(DEMO, tmp_path / "vault")  # the run writes its history into the vault
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext shad_magics"),
        nbformat.v4.new_code_cell(
            f'%%shad run -o r --vault "{vault}" --provider offline --no-widget --checkpoints off\n{GOAL}'
        ),
        nbformat.v4.new_code_cell("r.dag"),
        nbformat.v4.new_code_cell("r.citations"),
        nbformat.v4.new_code_cell("r.metrics"),
        nbformat.v4.new_code_cell(f'%shad search rest beans after roasting --vault "{vault}"'),
        nbformat.v4.new_code_cell("import networkx as nx; print(type(r.dag).__mro__[1].__name__)"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHAD_", "ANTHROPIC_", "OPENAI_"))}
    env |= {"SHAD_HOME": str(tmp_path / "home"), "SHAD_STORE": str(tmp_path / "store.sqlite3")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    execute_notebook(nb, tmp_path, env)

    def shown(index: int) -> dict[str, Any]:
        (out,) = [o for o in nb.cells[index].outputs if o["output_type"] == "execute_result"]
        return dict(out["data"])

    dag, citations, metrics, search = (shown(i) for i in (2, 3, 4, 5))
    assert "DiGraph at 0x" not in dag["text/plain"] and "<code>root</code>" in dag["text/html"]
    assert html.escape(GOAL) in dag["text/html"]
    assert 'title="Open in Obsidian">Roasting/Resting beans</a>' in citations["text/html"]
    assert ">task</th>" in metrics["text/html"] and "NaN" not in metrics["text/html"]
    assert "hits for <i>rest beans after roasting</i>" in search["text/html"]
    assert "NaN" not in search["text/html"] and "..." not in search["text/html"]
    assert nb.cells[6].outputs[0]["text"].strip() == "DiGraph"
