"""``ShadResult`` (shad_magics._result): the report with clickable citations, the mime bundle, metrics
and the DAG, built from real offline runs on the demo vault."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse

import networkx as nx
import pytest
from _demo import DEMO

from engine import Run, run
from engine.retrieval.citations import extract_citations
from shad_magics import ShadResult, ShadUsageError
from shad_magics._result import MIME, citation_links, vault_roots

GOAL = "How long should I rest beans after roasting, and why?"


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    return run(GOAL, str(DEMO), provider="offline", history_dir=str(tmp_path / "history"))


def test_markdown_links_every_citation(finished: Run) -> None:
    res = ShadResult(finished)
    body = res.markdown
    assert not body.startswith("---") and "type: report" not in body
    cited = extract_citations(finished.report)
    assert cited and "[[" not in body.split("> [!note]")[0]  # every wikilink of the answer became a link
    assert body.count("(<obsidian://open?vault=vault&file=") == finished.report.count("[[")
    for uri in [part.split(">)")[0] for part in body.split("[↗](<")[1:]]:
        assert Path(unquote(urlparse(uri).path)).is_file()
    assert "[Roasting/Resting beans#How long to rest](<obsidian://open?vault=vault&file=" in body
    assert "file=Roasting%2FResting%20beans%23How%20long%20to%20rest>)" in body


def test_links_skip_code_and_unresolved_and_use_aliases(finished: Run) -> None:
    finished.report = (
        "---\ntype: report\n---\n\n"
        "See [[Roasting/Resting beans|resting]] and [[No such note]].\n\n"
        "```markdown\n[[Roasting/Resting beans]]\n```\n\nInline `[[Roasting/Resting beans]]` too.\n"
    )
    body = ShadResult(finished).markdown
    assert body.startswith(
        "See [resting](<obsidian://open?vault=vault&file=Roasting%2FResting%20beans>) [↗](<file://"
    )
    assert "[[No such note]]" in body
    assert "```markdown\n[[Roasting/Resting beans]]\n```" in body
    assert "Inline `[[Roasting/Resting beans]]` too." in body


def test_citations_carry_links(finished: Run) -> None:
    res = ShadResult(finished)
    assert len(res.citations) == len(finished.citations)
    for c in res.citations:
        assert c["uri"].startswith("obsidian://open?vault=vault&file=")
        assert Path(unquote(urlparse(c["file"]).path)) == DEMO / c["path"]


def test_mime_bundle_and_metadata(finished: Run) -> None:
    data, metadata = ShadResult(finished)._repr_mimebundle_()
    assert set(data) == {MIME, "text/html", "text/markdown", "text/plain"}
    payload = data[MIME]
    json.dumps(payload)  # what `shad batch` reads back from a notebook must be plain JSON
    assert payload["run_id"] == finished.id and payload["status"] == "SUCCESS" and payload["exit_code"] == 0
    assert payload["goal"] == GOAL and payload["failures"] == []
    assert payload["metrics"] == finished.summary["metrics"]
    assert payload["history_dir"] == str(finished.history.dir)
    assert [c["path"] for c in payload["citations"]] == [c["path"] for c in finished.citations]
    assert metadata == {MIME: {"run_id": finished.id, "status": "SUCCESS"}}
    assert data["text/plain"].startswith(f"Shad run {finished.id}: SUCCESS · ")


def test_formats(finished: Run) -> None:
    as_json, _ = ShadResult(finished, format="json")._repr_mimebundle_()
    assert set(as_json) == {MIME, "application/json", "text/plain"}
    assert json.loads(as_json["text/plain"]) == as_json["application/json"]
    as_text, _ = ShadResult(finished, format="text")._repr_mimebundle_()
    assert set(as_text) == {MIME, "text/plain"} and "[[Roasting/Resting beans" in as_text["text/plain"]


def test_unknown_format(finished: Run) -> None:
    with pytest.raises(ShadUsageError, match="unknown result format 'yaml'"):
        ShadResult(finished, format="yaml")


def test_metrics_and_dag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    goal = "Compare washed and natural processing, and explain how each changes roasting."
    finished = run(goal, str(DEMO), provider="offline", history_dir=str(tmp_path / "h"), strategy="research")
    res = ShadResult(finished)
    assert len(finished.dag) > 1
    assert list(res.metrics["node_id"]) == [n.id for n in finished.dag]
    assert {"tokens", "status", "duration_ms", "retrieval_score"} <= set(res.metrics.columns)
    graph = res.dag
    assert isinstance(graph, nx.DiGraph) and graph.graph["run_id"] == finished.id
    assert set(graph.nodes) == {n.id for n in finished.dag}
    for node in finished.dag:
        attrs = graph.nodes[node.id]
        assert (attrs["task"], attrs["status"], attrs["tokens"]) == (
            node.task,
            node.status.value,
            node.tokens,
        )
        if node.parent:
            assert graph.edges[node.parent, node.id]["kind"] == "child"
    assert nx.is_directed_acyclic_graph(graph)


def test_partial_banner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    partial = run(GOAL, str(DEMO), provider="offline", history_dir=str(tmp_path / "h"), max_tokens=1000)
    res = ShadResult(partial)
    assert not res.ok and res.status.value == "PARTIAL"
    assert res.markdown.startswith("> **⚠ PARTIAL**: token budget exhausted")
    assert f"`%shad resume {partial.id}`" in res.markdown.splitlines()[0]


def test_a_loaded_run_renders_the_same(finished: Run) -> None:
    loaded = ShadResult(Run.load(finished.id))
    assert loaded.markdown == ShadResult(finished).markdown
    assert loaded.to_json() == ShadResult(finished).to_json()
    assert repr(loaded) == f"<ShadResult {finished.id} SUCCESS>"


def test_vault_ids_match_the_engine(tmp_path: Path) -> None:
    a, b, c = tmp_path / "one" / "Notes", tmp_path / "two" / "Notes", tmp_path / "My Vault"
    for folder in (a, b, c):
        folder.mkdir(parents=True)
    roots = vault_roots([str(a), str(b), str(c)])
    assert roots == {"notes": a, "notes-2": b, "my-vault": c}
    from engine import VaultSet

    assert VaultSet([a, b, c]).ids == list(roots)


def test_citations_of_a_vanished_vault_keep_no_link(tmp_path: Path) -> None:
    gone = tmp_path / "context"
    cites = [{"vault": "context", "path": "memo.md", "heading": None, "block": None, "resolved": True}]
    assert citation_links(cites, {"context": gone}) == cites
    gone.mkdir()
    (linked,) = citation_links(cites, {"context": gone})
    assert (
        linked["uri"] == "obsidian://open?vault=context&file=memo"
        and linked["file"] == (gone / "memo.md").as_uri()
    )


def test_a_relative_vault_folder_still_gets_a_file_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shad_magics._links import _link_for

    monkeypatch.chdir(tmp_path)
    uri, file_uri = _link_for(Path("vault"), "Notes/A b.md", "H")  # as `--vault vault` names it
    assert file_uri == (tmp_path / "vault" / "Notes" / "A b.md").as_uri()
    assert uri == "obsidian://open?vault=vault&file=Notes%2FA%20b%23H"
