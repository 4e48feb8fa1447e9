"""engine/vault/_links.py: links resolved when notes are indexed, kept right as notes come and go."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine import Vault
from engine.vault import _index, _links
from engine.vault._graph import LinkGraph
from engine.vault._parse import parse_note
from engine.vault._scan import scan_vault

pytestmark = pytest.mark.usefixtures("shad_home")
MakeVault = Callable[..., Path]
ROOT = Path(__file__).resolve().parent.parent
REAL_VAULTS = ROOT.parent / "shared" / "vaults"


def reference(root: Path) -> LinkGraph:
    """The whole-vault graph resolved in memory from the notes on disk (how reads worked before)."""
    rows: list[tuple[str, int, str | None, str | None, str | None, str | None]] = []
    for rel, entry in sorted(scan_vault(str(root)).files.items(), key=lambda kv: kv[0]):
        if rel.startswith("Shad/History/"):
            continue
        if not entry.is_note:
            rows.append((rel, 0, None, None, None, None))
            continue
        note = parse_note(rel, (root / rel).read_bytes())
        links = json.dumps([link.to_dict() for link in note.links])
        rows.append((rel, 1, note.title, note.type, json.dumps(note.aliases), links))
    return LinkGraph.build(rows)


def summary(g: LinkGraph) -> dict[str, Any]:
    edges = {
        (a, b): (d["kind"], d["count"], sorted(d.get("relations", ())))
        for a, b, d in g.graph.edges(data=True)
    }
    return {
        "nodes": sorted(g.graph.nodes),
        "edges": edges,
        "unresolved": sorted((u.source, u.target, u.line, u.kind) for u in g.unresolved),
        "ambiguous": sorted(json.dumps(a, sort_keys=True) for a in g.ambiguous),
        "links": g.link_count,
    }


def assert_same_as_reference(vault: Vault) -> None:
    vault.refresh()
    vault._graph = None  # the export is cached per refresh; read it from the tables again
    assert summary(vault.graph()) == summary(reference(vault.root))
    ref = reference(vault.root)
    for path in sorted(ref.graph.nodes)[:40]:
        assert vault.backlinks(path) == ref.backlinks(path), path
        assert vault.neighbors(path, 2) == ref.neighbors(path, 2), path
        note = vault.read_note(path)
        for link in note.links:
            assert (link.resolved, link.ambiguous) == _resolved(ref, link.target, path), (path, link.target)


def _resolved(ref: LinkGraph, target: str, source: str) -> tuple[str | None, list[str] | None]:
    found, others = ref.resolver.resolve(target, source)
    return found, others or None


def test_demo_vault_resolves_as_the_in_memory_graph_did(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root)
    assert_same_as_reference(Vault(root))


@pytest.mark.parametrize("name", ["obsidian-help", "zettelkasten-dy"])
def test_a_real_vault_resolves_as_the_in_memory_graph_did(name: str) -> None:
    root = REAL_VAULTS / name
    if not root.is_dir():
        pytest.skip(f"{root} is not here (../shared/vaults)")
    assert_same_as_reference(Vault(root))


def test_a_link_resolves_when_its_target_appears_and_not_after_it_goes(make_vault: MakeVault) -> None:
    root = make_vault({"A.md": "See [[Later]] and [[Gone]].\n", "Gone.md": "here for now\n"})
    v = Vault(root)
    assert v.resolve_link("Later", "A.md") is None
    assert v.backlinks("Gone.md") == ["A.md"]
    (root / "Sub").mkdir()
    (root / "Sub" / "Later.md").write_text("arrived\n")
    (root / "Gone.md").unlink()
    v.refresh()
    assert [link.resolved for link in v.read_note("A.md").links] == ["Sub/Later.md", None]
    assert v.backlinks("Sub/Later.md") == ["A.md"]
    assert [u["target"] for u in v.unresolved_links()] == ["Gone"]
    assert v.status()["unresolved_links"] == 1
    assert_same_as_reference(v)


def test_a_rename_moves_the_links_that_follow_the_name(make_vault: MakeVault) -> None:
    root = make_vault({"A.md": "[[Old name]] [[New name]]\n", "Old name.md": "x\n"})
    v = Vault(root)
    v.refresh()
    (root / "Old name.md").rename(root / "New name.md")
    v.refresh()
    assert [link.resolved for link in v.read_note("A.md").links] == [None, "New name.md"]
    assert v.backlinks("New name.md") == ["A.md"]
    assert_same_as_reference(v)


def test_an_alias_gained_or_lost_changes_what_links_to_it(make_vault: MakeVault) -> None:
    root = make_vault({"A.md": "[[Espresso]]\n", "Shots.md": "no alias yet\n"})
    v = Vault(root)
    assert v.backlinks("Shots.md") == []
    (root / "Shots.md").write_text("---\naliases: [Espresso]\n---\nnow named\n")
    v.refresh()
    assert v.backlinks("Shots.md") == ["A.md"]
    assert v.read_note("A.md").links[0].resolved == "Shots.md"
    (root / "Shots.md").write_text("---\naliases: [Ristretto]\n---\nrenamed\n")
    v.refresh()
    assert v.backlinks("Shots.md") == [] and v.resolve_link("Espresso", "A.md") is None
    assert_same_as_reference(v)


def test_a_new_note_in_the_linking_folder_takes_an_ambiguous_name(make_vault: MakeVault) -> None:
    root = make_vault({"Deep/Er/Dup.md": "far\n", "Here/A.md": "[[Dup]]\n", "Top/Dup.md": "near top\n"})
    v = Vault(root)
    assert v.read_note("Here/A.md").links[0].resolved == "Top/Dup.md"  # the shallowest
    (root / "Here" / "Dup.md").write_text("in A's own folder\n")
    v.refresh()
    link = v.read_note("Here/A.md").links[0]
    assert link.resolved == "Here/Dup.md" and link.ambiguous == ["Top/Dup.md", "Deep/Er/Dup.md"]
    assert v.status()["ambiguous_links"] == 1
    assert_same_as_reference(v)


def test_editing_a_target_keeps_its_backlinks_without_resolving_them_again(make_vault: MakeVault) -> None:
    root = make_vault({f"N{i}.md": "[[Hub]]\n" for i in range(30)} | {"Hub.md": "hub\n"})
    v = Vault(root)
    assert len(v.backlinks("Hub.md")) == 30
    (root / "Hub.md").write_text("hub, edited with a [[N3]] link\n")
    stats = v.refresh()
    assert stats.updated == 1
    pending = v.index.query("SELECT count(*) FROM edges WHERE dst IS NULL")[0][0]
    assert pending == 0 and len(v.backlinks("Hub.md")) == 30
    assert v.neighbors("Hub.md") == sorted(f"N{i}.md" for i in range(30))
    assert_same_as_reference(v)


def test_attachments_come_and_go_as_link_targets(make_vault: MakeVault) -> None:
    root = make_vault({"A.md": "![[pic.png]] [[doc.pdf]]\n", "img/pic.png": b"\x89PNG"})
    v = Vault(root)
    assert [link.resolved for link in v.read_note("A.md").links] == ["img/pic.png", None]
    (root / "doc.pdf").write_bytes(b"%PDF")
    (root / "img" / "pic.png").unlink()
    v.refresh()
    assert [link.resolved for link in v.read_note("A.md").links] == [None, "doc.pdf"]
    assert_same_as_reference(v)


def test_random_changes_end_as_a_fresh_build_would(make_vault: MakeVault, tmp_path: Path) -> None:
    """Adds, renames, deletes, alias edits in random order: after each refresh the incremental resolution
    equals resolving everything again."""
    rng = random.Random(5)
    names = ["Alpha", "Beta", "Gamma", "Delta", "Eps"]
    folders = ["", "X/", "X/Y/", "Z/"]
    root = make_vault({"Start.md": "[[Alpha]] [[Beta]] [[X/Gamma]] [[Nick]]\n"})
    v = Vault(root)
    v.refresh()
    for _step in range(25):
        existing = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
        action = rng.choice(["add", "add", "delete", "rename", "alias"])
        if action == "add" or len(existing) < 2:
            path = root / f"{rng.choice(folders)}{rng.choice(names)}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            links = " ".join(f"[[{rng.choice([*names, 'Nick', 'X/Y/Delta'])}]]" for _ in range(3))
            path.write_text(f"{links}\n")
        else:
            victim = root / rng.choice([p for p in existing if p != "Start.md"] or existing)
            if action == "delete" and victim.name != "Start.md":
                victim.unlink()
            elif action == "rename":
                target = root / f"{rng.choice(folders)}{rng.choice(names)}.md"
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    victim.rename(target)
            else:
                victim.write_text(f"---\naliases: [{rng.choice(['Nick', 'Other'])}]\n---\n[[Start]]\n")
        v.refresh()
        v._graph = None
        assert summary(v.graph()) == summary(reference(root)), _step


def test_an_update_killed_before_resolving_is_finished_by_the_next(
    make_vault: MakeVault, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_vault({"A.md": "[[B]]\n"})
    v = Vault(root)
    v.refresh()
    (root / "B.md").write_text("b\n")

    def crash(conn: Any) -> int:
        raise RuntimeError("killed before the links were resolved")

    monkeypatch.setattr(_index, "resolve_pending", crash)
    with pytest.raises(RuntimeError):
        Vault(root).refresh()
    monkeypatch.undo()
    assert Vault(root).read_note("A.md").links[0].resolved == "B.md"
    assert Vault(root).backlinks("B.md") == ["A.md"]


def test_names_resolved_in_sql_and_the_rest_resolve_as_obsidian_does(make_vault: MakeVault) -> None:
    """A bare name one file answers to is resolved in SQL; names it must not take (case folded beyond
    ASCII, spaces, paths, backslashes, ambiguous or aliased names) resolve as the in-memory resolver does."""
    root = make_vault(
        {
            "A.md": "[[Élan]] [[ÉLAN]] [[ Beta ]] [[beta]] [[Sub\\Gamma]] [[sub/gamma]] [[Twin]] [[Nick]]"
            " [[Gamma.md]] [[Ω]] [[pic.png]] [[Nowhere]]\n",
            "élan.md": "x\n",
            "Beta.md": "x\n",
            "Sub/Gamma.md": "x\n",
            "X/Twin.md": "x\n",
            "Y/Twin.md": "x\n",
            "Y/Aliased.md": "---\naliases: [Nick]\n---\nx\n",
            "ω.md": "x\n",
            "img/pic.png": b"\x89PNG",
        }
    )
    assert_same_as_reference(Vault(root))


@pytest.mark.parametrize("name", ["demo", "obsidian-help", "zettelkasten-dy"])
def test_many_pending_links_resolve_in_bulk_as_one_by_one(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build with many pending links looks the names one file has up in a table listed once
    (``_resolve_one_named_in_bulk``): the same links, targets and candidates as link by link."""
    root = DEMO if name == "demo" else REAL_VAULTS / name
    if not root.is_dir():
        pytest.skip(f"{root} is not here (../shared/vaults)")
    bulk: list[int] = []
    real = _links._resolve_one_named_in_bulk

    def spy(conn: Any) -> None:
        bulk.append(1)
        real(conn)

    monkeypatch.setattr(_links, "_resolve_one_named_in_bulk", spy)
    sql = "SELECT src, dst, target, others FROM edges ORDER BY rowid"
    monkeypatch.setattr(_links, "_MANY_PENDING", 10**9)
    one_by_one = Vault(root, index_path=tmp_path / "a.sqlite")
    one_by_one.refresh()
    assert not bulk
    monkeypatch.setattr(_links, "_MANY_PENDING", 1)
    in_bulk = Vault(root, index_path=tmp_path / "b.sqlite")
    in_bulk.refresh()
    assert bulk
    assert in_bulk.index.query(sql) == one_by_one.index.query(sql)
    assert in_bulk.index.query("SELECT count(*) FROM edges WHERE dst > 0")[0][0] > 0
    # the temporary table is gone: a second bulk resolution on the same connection works
    (root_copy := tmp_path / "copy").mkdir()
    (root_copy / "A.md").write_text("[[B]] [[Nowhere]]\n")
    (root_copy / "B.md").write_text("b\n")
    v = Vault(root_copy, index_path=tmp_path / "c.sqlite")
    v.refresh()
    (root_copy / "C.md").write_text("[[B]]\n")
    v.refresh()
    assert v.backlinks("B.md") == ["A.md", "C.md"]


def test_reading_notes_and_links_never_imports_networkx(make_vault: MakeVault) -> None:
    root = make_vault({"A.md": "[[B]] [[Nowhere]]\n", "B.md": "[[A]]\n"})
    code = (
        "import sys; from engine import Vault; v = Vault(sys.argv[1]);"
        "n = v.read_note('A.md'); print(n.links[0].resolved, v.backlinks('B.md'), v.neighbors('A.md', 2),"
        " v.resolve_link('B'), len(v.unresolved_links()), v.status()['links'], 'networkx' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout.split()
    assert out == ["B.md", "['A.md']", "['B.md']", "B.md", "1", "3", "False"]
