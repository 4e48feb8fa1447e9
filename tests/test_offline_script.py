"""The offline provider's retrieval script: which search hits it keeps as context."""

from __future__ import annotations

from typing import Any

from engine.llm._offline_script import LIMIT, retrieval_script


class _Searches:
    """What the script sees as ``obsidian``: searches answer with fixed hits, best first."""

    def __init__(self, hits: list[dict[str, Any]]) -> None:
        self.hits = hits
        self.queries: list[str] = []

    def vaults(self) -> list[str]:
        return ["v"]

    def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        self.queries.append(query)
        return self.hits[:limit]


def _hit(path: str, passage: str) -> dict[str, Any]:
    return {"vault": "v", "path": path, "heading": None, "passage": passage}


def _run(task: str, hits: list[dict[str, Any]]) -> tuple[dict[str, Any], _Searches]:
    api = _Searches(hits)
    scope: dict[str, Any] = {"obsidian": api}
    exec(compile(retrieval_script(task), "<offline script>", "exec"), scope)
    return scope["__result__"], api


def test_a_hit_below_the_limit_that_holds_the_task_words_is_kept() -> None:
    task = "When choosing a host, how is resilience after a critical outage measured?"
    noise = [_hit(f"Noise {i}.md", f"Noise {i} mentions a host once.") for i in range(LIMIT + 2)]
    answer = _hit("Infra.md", "Resilience: measured by the time to recover from a critical outage.")
    result, api = _run(task, [*noise, answer])
    paths = [c["path"] for c in result["context"]]
    assert len(paths) == LIMIT
    assert "Infra.md" in paths
    assert paths[0] == "Infra.md"  # it holds most of the task's words
    assert "Noise 0.md" in paths  # the first hit keeps a place for its rank
    assert len(api.queries) == 2  # the task, then its key words
    assert result["citations"][paths.index("Infra.md")]["path"] == "Infra.md"


def test_words_count_only_where_a_word_starts() -> None:
    # "ons" of "add-ons" is not the end of "options"; "lets" is not the end of "bullets".
    task = "Which add-ons lets me sync?"
    plain = [_hit(f"Plain {i}.md", f"Plain text {i}.") for i in range(LIMIT)]
    decoy = _hit("Decoy.md", "Bullets and options.")
    result, _ = _run(task, [*plain, decoy])
    assert [c["path"] for c in result["context"]] == [h["path"] for h in plain]
