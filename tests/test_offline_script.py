"""The offline provider's retrieval script: which search hits it keeps as context."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine.llm._offline_script import LIMIT, retrieval_script


class _Searches:
    """What the script sees as ``obsidian``: searches answer with fixed hits, best first."""

    def __init__(self, hits: list[dict[str, Any]], bodies: dict[str, str] | None = None) -> None:
        self.hits = hits
        self.queries: list[str] = []
        self.bodies = bodies or {}
        self.read: list[str] = []
        self.by_query: dict[str, list[dict[str, Any]]] = {}  # a query's own hits, else ``hits``

    def vaults(self) -> list[str]:
        return ["v"]

    def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        self.queries.append(query)
        return self.by_query.get(query, self.hits)[:limit]

    def read_note(self, path: str, vault: str | None = None) -> dict[str, Any]:
        self.read.append(path)
        body = self.bodies[path]
        return {"body": body, "headings": _headings(body)}


def _headings(body: str) -> list[dict[str, Any]]:
    """The note API's headings of ``body``: text, level and offset of each Markdown heading."""
    return [
        {"text": m.group(2), "level": len(m.group(1)), "offset": m.start()}
        for m in re.finditer(r"^(#{1,6}) (.+)$", body, re.M)
    ]


def _hit(path: str, passage: str, heading: str | None = None) -> dict[str, Any]:
    return {"vault": "v", "path": path, "heading": heading, "passage": passage}


def _run(
    task: str,
    hits: list[dict[str, Any]],
    bodies: dict[str, str] | None = None,
    by_query: dict[str, list[dict[str, Any]]] | None = None,
) -> tuple[dict[str, Any], _Searches]:
    api = _Searches(hits, bodies)
    api.by_query = by_query or {}
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


def test_the_note_a_definition_question_names_opens_the_context() -> None:
    # The searches matched a list further down the note; what the note *is* comes first in it.
    body = "# Sherlocking\n\nSherlocking refers to an app copying a plugin's feature.\n\n## Plugins\n- Paste"
    named = _hit("Concepts/Sherlocking.md", "## Plugins sherlocked\n- Paste", heading="Plugins sherlocked")
    others = [_hit(f"Roundup {i}.md", f"Roundup {i}: sherlocked another plugin.") for i in range(LIMIT)]
    result, api = _run("What is Sherlocking?", [*others, named], {"Concepts/Sherlocking.md": body})
    first = result["context"][0]
    assert (first["path"], first["heading"], first["citation"]) == (
        "Concepts/Sherlocking.md",
        None,
        "[[Concepts/Sherlocking]]",
    )
    assert first["text"].startswith("# Sherlocking\n\nSherlocking refers to")
    assert api.read == ["Concepts/Sherlocking.md"] and len(result["context"]) == LIMIT


def test_a_note_whose_title_the_task_spells_out_opens_the_context() -> None:
    body = "# Using GitHub actions to create releases\n1. Update the manifest.\n2. Run `git tag 1.0.0`."
    path = "Guides/Using GitHub actions to create releases for plugins.md"
    later = _hit(path, "The original post covers other ways to automate this.", heading="Other ways")
    result, _ = _run("How do I use GitHub actions to create releases for my plugin?", [later], {path: body})
    assert [(c["path"], c["heading"]) for c in result["context"]] == [(path, None), (path, "Other ways")]
    assert "git tag" in result["context"][0]["text"]


@pytest.mark.parametrize(
    "task",
    [
        "How do I create releases?",  # a title only partly in the task: not about it
        "What is Sherlocking?",  # the note's opening is already the hit
    ],
)
def test_no_opening_is_added_when_the_title_does_not_name_the_task(task: str) -> None:
    path = "Guides/Using GitHub actions to create releases for plugins.md"
    hits = [_hit(path, "Steps to create releases."), _hit("Concepts/Sherlocking.md", "Sherlocking refers to")]
    result, api = _run(task, hits, {})
    assert api.read == [] and [c["heading"] for c in result["context"]] == [None, None]


def test_the_note_a_task_names_by_a_proper_name_opens_the_context() -> None:
    # The person's note holds few of the task's words; the plugins that hold many are other people's.
    task = "The GitHub user Artel250 has one plugin. Which AI assistant does it let you chat with?"
    plugins = [
        _hit(f"Plugins/ai-{i}.md", f"AI assistant plugin {i}: chat with an AI. GitHub: someone{i}")
        for i in range(LIMIT)
    ]
    person = _hit("People/Artel250.md", "### Plugins\n- [[chat-with-bard]]", heading="Plugins")
    github = _hit("Concepts/GitHub.md", "GitHub hosts every plugin's code.")
    body = "# Artel250\n- GitHub: Artel250\n### Plugins\n- [[chat-with-bard]]"
    result, api = _run(task, [*plugins, github, person], {"People/Artel250.md": body})
    first = result["context"][0]
    # Of the two notes the task names, the one fewer hits mention: GitHub is in every plugin's passage
    assert (first["path"], first["heading"]) == ("People/Artel250.md", None)
    assert first["text"] == body and api.read == ["People/Artel250.md"]
    assert "Concepts/GitHub.md" not in [c["path"] for c in result["context"]]


def test_a_capitalised_word_that_titles_no_hit_adds_nothing() -> None:
    hits = [_hit(f"Plugins/ai-{i}.md", f"AI assistant plugin {i}.") for i in range(LIMIT)]
    result, api = _run("Which AI assistant does Artel250 use?", hits, {})
    assert api.read == [] and [c["path"] for c in result["context"]] == [h["path"] for h in hits]


@pytest.mark.parametrize(
    "task", ["What is Docker?", "Summarize Docker", "Tell me about Docker.", "Describe docker"]
)
def test_an_ask_for_an_account_of_a_subject_opens_with_the_note_titled_by_it(task: str) -> None:
    hits = [_hit(f"Tools/Docker {c}.md", f"`docker {c}` and docker again.") for c in ("stop", "run", "ps")]
    hits.append(_hit("Misc/Docker.md", "`sudo pacman -S docker`", heading="Install"))
    result, api = _run(task, hits, {"Misc/Docker.md": "Tool that creates lightweight containers."})
    first = result["context"][0]
    assert (first["path"], first["heading"]) == ("Misc/Docker.md", None)
    assert first["text"].startswith("Tool that creates") and api.read == ["Misc/Docker.md"]


def test_a_comparison_searches_each_side_and_opens_with_each_sides_own_note() -> None:
    task = "Compare canvas and graph view: what is each for?"
    noise = [_hit(f"Noise {i}.md", f"The graph view of noise {i}.") for i in range(LIMIT)]
    tips = _hit("Plugins/Canvas.md", "## Advanced tips\nWatch the canvas videos.", heading="Advanced tips")
    graph = _hit("Plugins/Graph view.md", "Graph view shows how notes link.")
    bodies = {
        "Plugins/Canvas.md": "Canvas is a core plugin for visual note-taking.\n\n## Advanced tips\nVideos."
    }
    by_query = {"canvas view": [tips, *noise], "graph view": [graph, *noise]}
    result, api = _run(task, [*noise, tips, graph], bodies, by_query)
    assert api.queries[2:] == ["canvas view", "graph view"]  # each side without the other's words
    assert "compare" not in api.queries[1]  # what asks for a comparison is not searched for
    opening = [(c["path"], c["heading"]) for c in result["context"]][:2]
    assert opening == [("Plugins/Canvas.md", None), ("Plugins/Graph view.md", None)]
    assert result["context"][0]["text"].startswith("Canvas is a core plugin")


def test_a_side_without_a_note_of_its_own_gets_the_section_headed_by_it() -> None:
    task = "What are the differences between Live Preview and Source mode?"
    body = (
        "Views and modes.\n\n### Live Preview\nLive Preview hides syntax.\n\n"
        "### Source mode\nSource mode shows it all."
    )
    views = _hit("Views.md", "Views and modes.")
    noise = [_hit(f"Noise {i}.md", f"Switch between Live Preview and Source mode {i}.") for i in range(LIMIT)]
    result, api = _run(task, [views, *noise], {"Views.md": body})
    first = [(c["path"], c["heading"], c["text"]) for c in result["context"][:2]]
    assert api.read == ["Views.md"]  # read once for both sides' headings and both sections
    assert first == [
        ("Views.md", "Live Preview", "### Live Preview\nLive Preview hides syntax."),
        ("Views.md", "Source mode", "### Source mode\nSource mode shows it all."),
    ]


def test_a_side_compared_on_an_aspect_gets_the_hit_whose_place_names_both() -> None:
    task = "Compare Obsidian Sync and Obsidian Publish security"
    both = [_hit(f"Teams {i}.md", f"Obsidian Sync and Obsidian Publish security {i}.") for i in range(LIMIT)]
    sync = _hit("Obsidian Sync/Security and privacy.md", "End-to-end encryption.", heading="Encryption")
    publish = _hit(
        "Obsidian Publish/Security and privacy.md", "Site passwords.", heading="Password protection"
    )
    result, _ = _run(task, [*both, sync, publish])
    assert [c["path"] for c in result["context"][:2]] == [sync["path"], publish["path"]]


def test_a_note_titled_by_a_side_without_its_shared_word_is_not_that_side() -> None:
    task = "What is the difference between symmetric and asymmetric encryption?"
    relation = _hit("Math/Symmetric.md", "A relation is symmetric when a R b implies b R a.")
    crypto = dict(_hit("Security/Symmetric Cryptography.md", "One key encrypts and decrypts."), score=1.2)
    noise = [_hit(f"Noise {i}.md", f"Symmetric and asymmetric noise {i}.") for i in range(LIMIT)]
    by_query = {"symmetric encryption": [crypto, relation, *noise]}  # an alias names it whole
    result, _ = _run(task, [relation, *noise, crypto], by_query=by_query)
    assert result["context"][0]["path"] == "Security/Symmetric Cryptography.md"
    assert result["context"][1]["path"] != "Math/Symmetric.md"


def test_the_note_a_task_names_gives_its_section_on_the_tasks_other_words() -> None:
    task = "How do I set up Obsidian Sync on a new device?"
    body = (
        "You purchased Obsidian Sync.\n"
        + "Long opening. " * 100
        + "\n## Set up Obsidian Sync for the first time\nLog in.\n"
        "### Create a new remote vault\nSelect Create.\n"
        "## Sync a remote vault on another device\n1. Open Sync."
    )
    named = _hit("Obsidian Sync/Set up Obsidian Sync.md", "You purchased Obsidian Sync.")
    noise = [_hit(f"Noise {i}.md", f"Set up Obsidian Sync on a new device {i}.") for i in range(LIMIT)]
    result, api = _run(task, [*noise, named], {"Obsidian Sync/Set up Obsidian Sync.md": body})
    first = [(c["path"], c["heading"]) for c in result["context"][:2]]
    # the noun of "a new device" decides between two headings that hold one word each; a section the
    # opening (its first SECTION_CHARS) holds already is not added again
    assert first == [
        ("Obsidian Sync/Set up Obsidian Sync.md", None),
        ("Obsidian Sync/Set up Obsidian Sync.md", "Sync a remote vault on another device"),
    ]
    assert result["context"][1]["text"].endswith("1. Open Sync.")
    assert api.read == ["Obsidian Sync/Set up Obsidian Sync.md"]  # read once
