"""engine/vault/_graph.py: Obsidian's link resolution and the vault's link graph."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _demo import DEMO

from engine.vault._graph import LinkGraph, Resolver
from engine.vault._parse import parse_note
from engine.vault._scan import scan_vault

MakeVault = Callable[..., Path]
Row = tuple[str, int, str | None, str | None, str | None, str | None]


def rows_for(root: Path) -> list[Row]:
    """The rows the index hands to ``LinkGraph.build``: one per file, notes with aliases and links."""
    rows: list[Row] = []
    for rel, entry in sorted(scan_vault(str(root)).files.items()):
        if not entry.is_note:
            rows.append((rel, 0, None, None, None, None))
            continue
        note = parse_note(rel, (root / rel).read_bytes())
        rows.append(
            (
                rel,
                1,
                note.title,
                note.type,
                json.dumps(note.aliases),
                json.dumps([link.to_dict() for link in note.links]),
            )
        )
    return rows


def graph_of(make_vault: MakeVault, files: dict[str, str | bytes]) -> LinkGraph:
    return LinkGraph.build(rows_for(make_vault(files)))


# --- Resolver --------------------------------------------------------------------------------------------

FILES = [
    "Home.md",
    "Note.md",
    "A/Sub/Note.md",
    "A/Sub/Other.md",
    "B/Note.md",
    "Y/Dup.md",
    "Z/Dup.md",
    "X/Deep/Dup.md",
    "Q/Same.md",
    "R/Same.md",
    "Solo/Only here.md",
    "Folder/v1.2 Notes.md",
    "img/Pic.png",
    "docs/report.pdf",
    "Café/Crème.md",
]
ALIASES = {
    "Solo/Only here.md": ["The One", "Uno"],
    "Home.md": ["Start"],
    "Q/Same.md": ["Shared"],
    "R/Same.md": ["Shared"],
}


@pytest.fixture
def resolver() -> Resolver:
    return Resolver(FILES, ALIASES)


@pytest.mark.parametrize(
    ("target", "source", "expected"),
    [
        # exact vault path, case-insensitive, with or without .md
        ("Home", None, "Home.md"),
        ("home", None, "Home.md"),
        ("HOME.MD", None, "Home.md"),
        ("A/Sub/Note", None, "A/Sub/Note.md"),
        ("a/sub/note.md", "B/Note.md", "A/Sub/Note.md"),
        ("/Home", None, "Home.md"),
        ("café/crème", None, "Café/Crème.md"),
        # relative to the linking note
        ("./Other", "A/Sub/Note.md", "A/Sub/Other.md"),
        ("./Other.md", "A/Sub/Note.md", "A/Sub/Other.md"),
        ("../../Home", "A/Sub/Note.md", "Home.md"),
        ("../Sub/Other", "A/Sub/Note.md", "A/Sub/Other.md"),
        # path suffix
        ("Sub/Note", None, "A/Sub/Note.md"),
        ("sub/other.md", "Home.md", "A/Sub/Other.md"),
        ("Deep/Dup", "Y/Dup.md", "X/Deep/Dup.md"),
        # unique basename
        ("Only here", "A/Sub/Note.md", "Solo/Only here.md"),
        ("only here.md", None, "Solo/Only here.md"),
        ("v1.2 Notes", None, "Folder/v1.2 Notes.md"),
        # alias fallback
        ("The One", None, "Solo/Only here.md"),
        ("uno", "B/Note.md", "Solo/Only here.md"),
        ("Start", None, "Home.md"),
        # attachments need their extension
        ("Pic.png", None, "img/Pic.png"),
        ("img/pic.PNG", None, "img/Pic.png"),
        ("report.pdf", "A/Sub/Note.md", "docs/report.pdf"),
    ],
)
def test_resolves(resolver: Resolver, target: str, source: str | None, expected: str) -> None:
    assert resolver.resolve(target, source) == (expected, [])


@pytest.mark.parametrize(
    ("target", "source"),
    [
        ("Missing", None),
        ("Pic", None),  # an attachment is not found without its extension
        ("../Note", "A/Sub/Other.md"),  # A/Note.md does not exist
        ("./Home", "A/Sub/Other.md"),  # a relative path is taken literally: A/Sub/Home.md
        ("Other/Note", None),  # a path suffix must match whole folder names
        ("ub/Note", None),
        ("Sub", None),  # folders are not link targets
        ("Only", None),  # no prefix matching
    ],
)
def test_does_not_resolve(resolver: Resolver, target: str, source: str | None) -> None:
    assert resolver.resolve(target, source) == (None, [])


def test_empty_target_is_the_linking_note(resolver: Resolver) -> None:
    assert resolver.resolve("", "A/Sub/Note.md") == ("A/Sub/Note.md", [])


def test_exact_path_beats_basename_and_alias() -> None:
    r = Resolver(["Start.md", "Other/Start.md", "Home.md"], {"Home.md": ["Start"]})
    assert r.resolve("Start", "Other/x.md") == ("Start.md", [])
    assert r.resolve("Other/Start", None) == ("Other/Start.md", [])


def test_basename_beats_alias() -> None:
    r = Resolver(["Folder/Espresso.md", "Brewing/Shots.md"], {"Brewing/Shots.md": ["Espresso"]})
    assert r.resolve("Espresso", None) == ("Folder/Espresso.md", [])


def test_ambiguous_name_prefers_same_folder_and_records_the_others(resolver: Resolver) -> None:
    chose, others = resolver.resolve("Dup", "Z/Index.md")
    assert chose == "Z/Dup.md"
    assert sorted(others) == ["X/Deep/Dup.md", "Y/Dup.md"]


def test_ambiguous_name_prefers_shallowest_then_alphabetical(resolver: Resolver) -> None:
    chose, others = resolver.resolve("Dup", "Home.md")
    assert chose == "Y/Dup.md"  # Y and Z are equally shallow; Y sorts first; X/Deep is deeper
    assert others == ["Z/Dup.md", "X/Deep/Dup.md"]
    assert resolver.resolve("Same", None) == ("Q/Same.md", ["R/Same.md"])


def test_ambiguous_order_is_independent_of_file_order() -> None:
    files = ["Z/Dup.md", "X/Deep/Dup.md", "Y/Dup.md"]
    assert Resolver(files, {}).resolve("Dup", None) == Resolver(files[::-1], {}).resolve("Dup", None)


def test_shallow_beats_alphabetical() -> None:
    r = Resolver(["A/B/Name.md", "Z/Name.md"], {})
    assert r.resolve("Name", "Q/x.md") == ("Z/Name.md", ["A/B/Name.md"])


def test_ambiguous_alias(resolver: Resolver) -> None:
    assert resolver.resolve("Shared", None) == ("Q/Same.md", ["R/Same.md"])
    assert resolver.resolve("Shared", "R/Other.md") == ("R/Same.md", ["Q/Same.md"])


def test_ambiguous_path_suffix() -> None:
    r = Resolver(["One/Sub/N.md", "Two/Sub/N.md", "Two/Other.md"], {})
    assert r.resolve("Sub/N", "Two/Other.md") == ("Two/Sub/N.md", [])  # relative to the note's folder
    assert r.resolve("Sub/N", None) == ("One/Sub/N.md", ["Two/Sub/N.md"])


def test_note_and_attachment_with_same_stem() -> None:
    r = Resolver(["Diagram.md", "img/Diagram.png"], {})
    assert r.resolve("Diagram", None) == ("Diagram.md", [])
    assert r.resolve("Diagram.png", None) == ("img/Diagram.png", [])


def test_backslashes_are_read_as_slashes(resolver: Resolver) -> None:
    assert resolver.resolve("A\\Sub\\Note", None) == ("A/Sub/Note.md", [])


# --- LinkGraph -------------------------------------------------------------------------------------------


def test_nodes_are_notes_with_title_and_type(make_vault: MakeVault) -> None:
    g = graph_of(
        make_vault,
        {"A.md": "---\ntype: concept\n---\n[[B]]", "Sub/B.md": "![[pic.png]]", "pic.png": b"\x89PNG"},
    )
    assert set(g.graph.nodes) == {"A.md", "Sub/B.md"}
    assert g.graph.nodes["A.md"] == {"title": "A", "type": "concept"}
    assert g.graph.nodes["Sub/B.md"]["type"] is None


def test_edge_kinds(make_vault: MakeVault) -> None:
    g = graph_of(
        make_vault,
        {
            "Source.md": '---\nup: "[[Parent]]"\n---\n[[Linked]] ![[Embedded]] [md](Marked.md)\n',
            "Parent.md": "",
            "Linked.md": "",
            "Embedded.md": "",
            "Marked.md": "",
        },
    )
    kinds = {t: d["kind"] for _, t, d in g.graph.out_edges("Source.md", data=True)}
    assert kinds == {
        "Linked.md": "link",
        "Embedded.md": "embed",
        "Marked.md": "link",
        "Parent.md": "frontmatter",
    }
    assert all("relations" not in d for _, _, d in g.graph.out_edges("Source.md", data=True))
    assert g.link_count == 4
    assert g.unresolved == []


@pytest.mark.parametrize("field", ["derived_from", "supports", "contradicts", "references", "part_of"])
def test_typed_relations(make_vault: MakeVault, field: str) -> None:
    g = graph_of(make_vault, {"Claim.md": f'---\n{field}: "[[Evidence]]"\n---\nbody', "Evidence.md": "x"})
    data = g.graph.edges["Claim.md", "Evidence.md"]
    assert data["kind"] == "frontmatter"
    assert data["relations"] == {field}


def test_plain_string_relation_becomes_an_edge(make_vault: MakeVault) -> None:
    g = graph_of(make_vault, {"Chapter.md": "---\npart_of: Book\n---\nx", "Folder/Book.md": "x"})
    assert g.graph.edges["Chapter.md", "Folder/Book.md"]["relations"] == {"part_of"}


def test_several_relations_and_a_body_link_to_one_note(make_vault: MakeVault) -> None:
    g = graph_of(
        make_vault,
        {
            "A.md": (
                '---\nsupports: "[[B]]"\nreferences: ["[[B]]"]\nrelated: "[[B]]"\n---\n'
                "See [[B]] and [[B#H]].\n"
            ),
            "B.md": "# H\n",
        },
    )
    data = g.graph.edges["A.md", "B.md"]
    assert data["kind"] == "link"  # the first link written decides the kind
    assert data["count"] == 5
    assert data["relations"] == {"supports", "references"}  # "related" is not a typed relation


def test_self_links_are_not_edges(make_vault: MakeVault) -> None:
    g = graph_of(make_vault, {"A.md": "# H\n[[A]] [[#H]] [[A#H]] [x](A.md) [y](#H)\n", "B.md": "[[A]]"})
    assert not g.graph.has_edge("A.md", "A.md")
    assert list(g.graph.successors("A.md")) == []
    assert g.unresolved == []
    assert g.backlinks("A.md") == ["B.md"]


def test_attachments_resolve_but_are_not_nodes(make_vault: MakeVault) -> None:
    g = graph_of(
        make_vault,
        {
            "A.md": "![[diagram.svg]] [pdf](files/report.pdf)",
            "img/diagram.svg": "<svg/>",
            "files/report.pdf": b"%PDF",
        },
    )
    assert "img/diagram.svg" not in g.graph
    assert g.unresolved == []
    assert list(g.graph.successors("A.md")) == []
    assert g.resolver.resolve("diagram.svg", "A.md") == ("img/diagram.svg", [])


def test_unresolved_links_are_listed(make_vault: MakeVault) -> None:
    g = graph_of(
        make_vault,
        {
            "A.md": "line one\n[[Missing note]]\n![[gone.png]]\n",
            "B.md": '---\nsupports: "[[Nowhere]]"\n---\n[x](Absent.md)\n',
        },
    )
    found = {(u.source, u.target, u.line, u.kind) for u in g.unresolved}
    assert found == {
        ("A.md", "Missing note", 2, "wikilink"),
        ("A.md", "gone.png", 3, "wikilink"),
        ("B.md", "Nowhere", 0, "frontmatter"),
        ("B.md", "Absent.md", 4, "markdown"),
    }
    assert g.graph.number_of_edges() == 0


def test_ambiguous_links_are_recorded(make_vault: MakeVault) -> None:
    g = graph_of(
        make_vault,
        {
            "Brewing/Troubleshooting.md": "brew",
            "Roasting/Troubleshooting.md": "roast",
            "Brewing/Espresso.md": "[[Troubleshooting]]",
            "Home.md": "[[Troubleshooting]] [[Roasting/Troubleshooting]]",
        },
    )
    assert g.graph.has_edge("Brewing/Espresso.md", "Brewing/Troubleshooting.md")  # same folder wins
    assert g.graph.has_edge("Home.md", "Brewing/Troubleshooting.md")  # equally shallow: alphabetical
    assert g.graph.has_edge("Home.md", "Roasting/Troubleshooting.md")  # the full path is not ambiguous
    by_source = {a["source"]: a for a in g.ambiguous}
    assert set(by_source) == {"Brewing/Espresso.md", "Home.md"}
    assert by_source["Home.md"] == {
        "source": "Home.md",
        "target": "Troubleshooting",
        "chose": "Brewing/Troubleshooting.md",
        "candidates": ["Brewing/Troubleshooting.md", "Roasting/Troubleshooting.md"],
    }
    assert by_source["Brewing/Espresso.md"]["chose"] == "Brewing/Troubleshooting.md"


def test_links_resolve_through_aliases(make_vault: MakeVault) -> None:
    g = graph_of(
        make_vault,
        {
            "Roasting/First crack.md": "---\naliases: [1C, First pop]\n---\n",
            "Log.md": "[[1C]] and [[first pop]]",
        },
    )
    assert g.graph.edges["Log.md", "Roasting/First crack.md"]["count"] == 2
    assert g.unresolved == []


def test_backlinks(make_vault: MakeVault) -> None:
    g = graph_of(
        make_vault,
        {
            "Target.md": "",
            "Z.md": "[[Target]]",
            "A.md": "[[Target]] [[Target]]",
            "Sub/M.md": "![[Target]]",
            "Other.md": "",
        },
    )
    assert g.backlinks("Target.md") == ["A.md", "Sub/M.md", "Z.md"]
    assert g.backlinks("Other.md") == []
    assert g.backlinks("Nope.md") == []


# chain: A -> B -> C -> D, and E -> B (so E is a neighbour of B through a backlink)
CHAIN = {"A.md": "[[B]]", "B.md": "[[C]]", "C.md": "[[D]]", "D.md": "", "E.md": "[[B]]", "Lonely.md": ""}


def test_neighbors_depth_one_follows_both_directions(make_vault: MakeVault) -> None:
    g = graph_of(make_vault, CHAIN)
    assert g.neighbors("B.md") == ["A.md", "C.md", "E.md"]
    assert g.neighbors("D.md", depth=1) == ["C.md"]  # only a backlink
    assert g.neighbors("A.md", depth=1) == ["B.md"]  # only an outgoing link


def test_neighbors_deeper(make_vault: MakeVault) -> None:
    g = graph_of(make_vault, CHAIN)
    assert g.neighbors("A.md", depth=2) == ["B.md", "C.md", "E.md"]
    assert g.neighbors("A.md", depth=3) == ["B.md", "C.md", "D.md", "E.md"]
    assert g.neighbors("A.md", depth=10) == ["B.md", "C.md", "D.md", "E.md"]
    assert g.neighbors("D.md", depth=2) == ["B.md", "C.md"]


def test_neighbors_edge_cases(make_vault: MakeVault) -> None:
    g = graph_of(make_vault, CHAIN)
    assert g.neighbors("Lonely.md", depth=3) == []
    assert g.neighbors("A.md", depth=0) == []
    assert g.neighbors("Missing.md") == []
    assert "A.md" not in g.neighbors("A.md", depth=5)  # never itself, even through a cycle


def test_neighbors_with_cycle(make_vault: MakeVault) -> None:
    g = graph_of(make_vault, {"A.md": "[[B]]", "B.md": "[[C]]", "C.md": "[[A]]"})
    assert g.neighbors("A.md", depth=5) == ["B.md", "C.md"]


def test_build_with_no_rows() -> None:
    g = LinkGraph.build([])
    assert g.graph.number_of_nodes() == 0
    assert g.unresolved == [] and g.ambiguous == []


def test_notes_without_links_column() -> None:
    g = LinkGraph.build([("A.md", 1, "A", None, None, None), ("B.md", 1, "B", None, "[]", "[]")])
    assert set(g.graph.nodes) == {"A.md", "B.md"}
    assert g.link_count == 0


# --- the demo vault --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_graph() -> LinkGraph:
    root = DEMO
    return LinkGraph.build(rows_for(root))


def test_demo_unresolved_links(demo_graph: LinkGraph) -> None:
    targets = {u.target for u in demo_graph.unresolved}
    assert {"Roasting/Cold smoke roasting", "Decaf processes"} <= targets
    assert "Hidden link" not in targets  # inside a %% comment %%
    assert "Not a link" not in targets  # inside fenced code
    sources = {u.source for u in demo_graph.unresolved if u.target == "Decaf processes"}
    assert sources == {"Beans/Processing methods.md"}


def test_demo_typed_relations(demo_graph: LinkGraph) -> None:
    g = demo_graph.graph
    assert "part_of" in g.edges["Roasting/Development time.md", "Roasting/Roasting stages.md"]["relations"]
    assert "references" in g.edges["Roasting/Development time.md", "People/Scott Rao.md"]["relations"]
    assert "derived_from" in g.edges["Water/Making brew water.md", "Water/Water chemistry.md"]["relations"]
    assert (
        "contradicts"
        in g.edges["Journal/2026-04-05 Water experiment.md", "Water/Filtering tap water.md"]["relations"]
    )
    assert "supports" in g.edges["Journal/2026-03-28 Espresso dial-in.md", "Brewing/Espresso.md"]["relations"]


def test_demo_backlinks_and_neighbors(demo_graph: LinkGraph) -> None:
    back = demo_graph.backlinks("Roasting/Development time.md")
    assert {"Roasting/Logging roasts.md", "Journal/2026-03-14 Roast log.md"} <= set(back)
    stages = demo_graph.backlinks("Roasting/Roasting stages.md")
    assert {"Roasting/First crack.md", "Roasting/Second crack.md", "Roasting/Drying phase.md"} <= set(stages)
    near = demo_graph.neighbors("Roasting/Development time.md", depth=1)
    assert {"Roasting/Roasting stages.md", "People/Scott Rao.md", "Roasting/Logging roasts.md"} <= set(near)
    assert set(near) < set(demo_graph.neighbors("Roasting/Development time.md", depth=2))


def test_demo_embeds_and_table_links(demo_graph: LinkGraph) -> None:
    g = demo_graph.graph
    assert g.edges["Brewing/Extraction.md", "Reference/Brew ratios.md"]["kind"] == "embed"
    assert "Equipment/grinder-burrs.svg" not in g
    assert {"Brewing/Pour-over.md", "Brewing/French press.md", "Brewing/Cold brew.md"} <= set(
        g.successors("Reference/Brew ratios.md")
    )


def test_demo_duplicate_names_link_by_full_path(demo_graph: LinkGraph) -> None:
    assert demo_graph.backlinks("Brewing/Troubleshooting.md")
    assert demo_graph.backlinks("Roasting/Troubleshooting.md")
    assert not any(a["target"].lower().endswith("troubleshooting") for a in demo_graph.ambiguous)
