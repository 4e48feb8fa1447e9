"""Behaviour of ``engine.Vault``: opening, reading notes safely, listing, links, graph and status."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from _demo import DEMO, write_vault

from engine import Vault
from engine.errors import NoteNotFoundError, PathOutsideVaultError, ShadError, UsageError, VaultNotFoundError

HIDDEN = {".obsidian", ".trash", ".git"}


pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """A private copy of the demo vault that a test may modify."""
    dest = tmp_path / "vault"
    shutil.copytree(DEMO, dest, symlinks=True)
    return dest


@pytest.fixture
def demo(demo_copy: Path) -> Vault:
    return Vault(demo_copy)


def demo_note_paths() -> list[str]:
    """Every note Obsidian would show in the demo vault, computed from disk."""
    out = []
    for p in DEMO.rglob("*.md"):
        rel = p.relative_to(DEMO)
        if any(part.startswith(".") for part in rel.parts):
            continue
        out.append(rel.as_posix())
    return sorted(out)


# --- opening ---


def test_missing_folder_is_vault_not_found(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError) as exc:
        Vault(tmp_path / "no-such-vault")
    assert "no-such-vault" in str(exc.value)
    assert isinstance(exc.value, ShadError)


def test_file_instead_of_folder_is_vault_not_found(tmp_path: Path) -> None:
    f = tmp_path / "note.md"
    f.write_text("# hi\n")
    with pytest.raises(VaultNotFoundError):
        Vault(f)


def test_vault_id_defaults_to_folder_slug_and_can_be_set(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "My Notes", {"a.md": "hello"})
    assert Vault(root).id == "my-notes"
    assert Vault(root, id="work").id == "work"


def test_opening_does_not_write_into_the_vault(demo_copy: Path, shad_home: Path) -> None:
    before = sorted(p.relative_to(demo_copy).as_posix() for p in demo_copy.rglob("*"))
    v = Vault(demo_copy)
    v.refresh()
    v.search("espresso")
    v.status()
    after = sorted(p.relative_to(demo_copy).as_posix() for p in demo_copy.rglob("*"))
    assert before == after
    assert Path(v.index.db_path).is_relative_to(shad_home)


# --- read_note ---


def test_read_note_fields(demo: Vault) -> None:
    note = demo.read_note("Roasting/First crack.md")
    assert note.path == "Roasting/First crack.md"
    assert note.frontmatter["type"] == "concept"
    assert "roasting/milestones" in note.tags
    assert "1C" in note.aliases
    assert note.body.lstrip().startswith("# First crack")
    assert "---" not in note.body.splitlines()[0]
    assert [h.text for h in note.headings][:2] == ["First crack", "What is happening"]
    assert note.headings[0].level == 1
    assert isinstance(note.hash, str) and len(note.hash) >= 16
    assert note.mtime == pytest.approx(os.path.getmtime(demo.root / "Roasting/First crack.md"))
    assert note.diagnostics == []
    assert note.vault == demo.id


def test_read_note_links_are_resolved(demo: Vault) -> None:
    note = demo.read_note("Roasting/First crack.md")
    by_target = {link.target: link for link in note.links}
    # a bare name resolves to the note in the same folder
    assert by_target["Development time"].resolved == "Roasting/Development time.md"
    assert by_target["Second crack"].resolved == "Roasting/Second crack.md"
    # a full path resolves exactly
    assert by_target["Beans/Kenya AA"].resolved == "Beans/Kenya AA.md"
    # the frontmatter relation is a link too
    fm = [link for link in note.links if link.kind == "frontmatter"]
    assert fm and fm[0].field == "part_of" and fm[0].resolved == "Roasting/Roasting stages.md"


def test_read_note_unresolved_link_stays_unresolved(demo: Vault) -> None:
    note = demo.read_note("Beans/Processing methods.md")
    decaf = [link for link in note.links if link.target == "Decaf processes"]
    assert decaf and decaf[0].resolved is None


def test_read_note_md_extension_optional(demo: Vault) -> None:
    a = demo.read_note("Roasting/Resting beans")
    b = demo.read_note("Roasting/Resting beans.md")
    assert a.path == b.path == "Roasting/Resting beans.md"
    assert a.hash == b.hash


def test_read_note_backslash_and_dot_segments_normalised(demo: Vault) -> None:
    assert demo.read_note("Roasting\\Resting beans.md").path == "Roasting/Resting beans.md"
    assert demo.read_note("./Roasting/./Resting beans.md").path == "Roasting/Resting beans.md"


@pytest.mark.parametrize(
    "bad",
    [
        "../outside.md",
        "Roasting/../../outside.md",
        "Roasting/../Home.md",  # '..' is refused even when it would stay inside
        "/etc/passwd",
        "C:/Windows/win.ini",
        "Home\x00.md",
        ".obsidian/app.json",
        ".obsidian/plugins/fake-sync/data.json",
        ".trash/Old draft.md",
        "Roasting/.hidden.md",
    ],
)
def test_read_note_refuses_paths_outside_vault(demo: Vault, bad: str) -> None:
    with pytest.raises(PathOutsideVaultError):
        demo.read_note(bad)


def test_read_note_refuses_absolute_path_even_inside_vault(demo: Vault) -> None:
    with pytest.raises(PathOutsideVaultError):
        demo.read_note(str(demo.root / "Home.md"))


def test_read_note_refuses_symlink_out_of_vault(tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("top secret token")
    root = write_vault(tmp_path / "v", {"a.md": "# A"})
    try:
        (root / "leak.md").symlink_to(secret)
        (root / "dir").symlink_to(tmp_path)
    except OSError:
        pytest.skip("symlinks not supported here")
    v = Vault(root)
    with pytest.raises(PathOutsideVaultError):
        v.read_note("leak.md")
    with pytest.raises(PathOutsideVaultError):
        v.read_note("leak")
    with pytest.raises((PathOutsideVaultError, NoteNotFoundError)):
        v.read_note("dir/secret.md")
    # the outside file is neither listed nor searchable
    assert "leak.md" not in v.list_notes()
    assert not any("secret" in h.snippet for h in v.search("secret token"))


def test_read_note_symlink_inside_vault_is_fine(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"real.md": "# Real\nbody"})
    try:
        (root / "alias.md").symlink_to(root / "real.md")
    except OSError:
        pytest.skip("symlinks not supported here")
    assert Vault(root).read_note("alias.md").body.strip().endswith("body")


@pytest.mark.parametrize("missing", ["Nope.md", "Nope", "Roasting/Nope.md", "Roasting"])
def test_read_note_missing_is_note_not_found(demo: Vault, missing: str) -> None:
    with pytest.raises(NoteNotFoundError) as exc:
        demo.read_note(missing)
    assert exc.value.hint


@pytest.mark.parametrize(
    "name",
    ["Grind size", "grind size", "[[Grind size]]", "![[Grind size#Chart|the chart]]", "brewing/grind size"],
)
def test_read_note_by_name_or_link(demo: Vault, name: str) -> None:
    """A note's name, or a wikilink to it, finds it as Obsidian resolves the link."""
    assert demo.read_note(name).path == "Brewing/Grind size.md"


def test_read_note_by_alias(demo: Vault) -> None:
    assert demo.read_note("Burr mill").path == "Equipment/Burr grinder.md"


def test_read_note_name_two_notes_share_is_refused_with_both(tmp_path: Path) -> None:
    root = write_vault(
        tmp_path / "v", {"Sync/Security.md": "# sync", "Publish/Security.md": "# publish", "photo.png": "x"}
    )
    v = Vault(root)
    with pytest.raises(NoteNotFoundError) as exc:
        v.read_note("Security")
    assert exc.value.candidates == ["Publish/Security.md", "Sync/Security.md"]
    assert "Publish/Security.md" in exc.value.message and "Sync/Security.md" in exc.value.message
    assert v.read_note("Sync/Security").body.strip() == "# sync"  # the path still picks one
    with pytest.raises(NoteNotFoundError):  # a name that is an attachment's is no note
        v.read_note("[[photo.png]]")


@pytest.mark.parametrize("empty", ["", "   "])
def test_read_note_empty_path_is_usage_error(demo: Vault, empty: str) -> None:
    with pytest.raises(UsageError):
        demo.read_note(empty)


def test_read_note_invalid_frontmatter_keeps_body_and_diagnoses(demo: Vault) -> None:
    note = demo.read_note("Journal/2026-02-01 Cupping notes.md")
    assert "invalid_frontmatter" in {d.code for d in note.diagnostics}
    assert "# 2026-02-01 Cupping notes" in note.body
    assert note.frontmatter.get("type") == "log"  # salvaged fields


def test_read_note_empty_and_frontmatter_only(demo: Vault) -> None:
    empty = demo.read_note("Reference/Empty stub.md")
    assert empty.body == ""
    assert {d.code for d in empty.diagnostics} == {"empty"}
    only = demo.read_note("Reference/Cupping form template.md")
    assert only.body.strip() == ""
    assert only.frontmatter
    assert "frontmatter_only" in {d.code for d in only.diagnostics}


def test_read_note_conflict_copy_has_diagnostic(demo: Vault) -> None:
    note = demo.read_note("Brewing/Espresso (conflict 2026-04-02).md")
    assert "sync_conflict" in {d.code for d in note.diagnostics}
    assert "sync_conflict" not in {d.code for d in demo.read_note("Brewing/Espresso.md").diagnostics}


def test_read_note_sees_current_disk_content(demo_copy: Path) -> None:
    v = Vault(demo_copy)
    v.read_note("Home.md")
    (demo_copy / "Home.md").write_text("# Changed\n", encoding="utf-8")
    assert v.read_note("Home.md").body.strip() == "# Changed"


def test_read_note_binary_and_non_utf8_do_not_crash(tmp_path: Path) -> None:
    root = write_vault(
        tmp_path / "v",
        {
            "latin1.md": "caf\xe9 cr\xe8me".encode("latin-1"),
            "binary.md": bytes(range(256)) * 4,
            "ok.md": "# ok",
        },
    )
    v = Vault(root)
    for p in ("latin1.md", "binary.md"):
        note = v.read_note(p)
        assert note.diagnostics, p
    assert "caf" in v.read_note("latin1.md").body


# --- list_notes ---


def test_list_notes_all(demo: Vault) -> None:
    notes = demo.list_notes()
    assert notes == demo_note_paths()
    assert notes == sorted(notes)
    assert not any(p.startswith(".") for p in notes)
    assert "Equipment/grinder-burrs.svg" not in notes
    assert all(p.endswith(".md") for p in notes)


def test_list_notes_folder(demo: Vault) -> None:
    brewing = demo.list_notes("Brewing")
    assert brewing and all(p.startswith("Brewing/") for p in brewing)
    assert "Brewing/Troubleshooting.md" in brewing
    assert "Roasting/Troubleshooting.md" not in brewing
    assert demo.list_notes("Brewing/") == brewing


def test_list_notes_not_recursive(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"top.md": "t", "A/a.md": "a", "A/B/b.md": "b", "Ab/x.md": "x"})
    v = Vault(root)
    assert v.list_notes(recursive=False) == ["top.md"]
    assert v.list_notes("A", recursive=False) == ["A/a.md"]
    assert v.list_notes("A") == ["A/B/b.md", "A/a.md"]  # 'Ab/' is not under 'A/'


def test_list_notes_hidden_folder_refused(demo: Vault) -> None:
    with pytest.raises(PathOutsideVaultError):
        demo.list_notes(".obsidian")
    with pytest.raises(PathOutsideVaultError):
        demo.list_notes("../")


def test_list_notes_unknown_folder_is_empty(demo: Vault) -> None:
    assert demo.list_notes("Nope") == []


# --- links and graph ---


def test_backlinks(demo: Vault) -> None:
    back = demo.backlinks("Roasting/First crack.md")
    assert "Home.md" in back
    assert "Roasting/Second crack.md" in back or "Roasting/Roasting stages.md" in back
    assert "Roasting/First crack.md" not in back
    assert back == sorted(back)
    assert demo.backlinks("Roasting/First crack") == back


def test_backlinks_via_alias_and_frontmatter(tmp_path: Path) -> None:
    root = write_vault(
        tmp_path / "v",
        {
            "Target.md": "---\naliases: [Other name]\n---\n# Target",
            "ByAlias.md": "see [[Other name]]",
            "ByFm.md": '---\npart_of: "[[Target]]"\n---\nbody',
            "ByEmbed.md": "![[Target#Target]]",
            "Unrelated.md": "nothing [[Missing]]",
        },
    )
    v = Vault(root)
    assert v.backlinks("Target.md") == ["ByAlias.md", "ByEmbed.md", "ByFm.md"]


def test_backlinks_missing_note(demo: Vault) -> None:
    with pytest.raises(NoteNotFoundError):
        demo.backlinks("Nope.md")


def test_neighbors_depth(tmp_path: Path) -> None:
    # chain a -> b -> c -> d, plus e -> a (incoming)
    root = write_vault(
        tmp_path / "v",
        {"a.md": "[[b]]", "b.md": "[[c]]", "c.md": "[[d]]", "d.md": "end", "e.md": "[[a]]", "f.md": "alone"},
    )
    v = Vault(root)
    assert v.neighbors("a.md") == ["b.md", "e.md"]
    assert v.neighbors("a.md", depth=1) == ["b.md", "e.md"]
    assert v.neighbors("a.md", depth=2) == ["b.md", "c.md", "e.md"]
    assert v.neighbors("a.md", depth=10) == ["b.md", "c.md", "d.md", "e.md"]
    assert v.neighbors("f.md", depth=3) == []


def test_neighbors_on_demo(demo: Vault) -> None:
    one = set(demo.neighbors("Roasting/First crack.md"))
    two = set(demo.neighbors("Roasting/First crack.md", depth=2))
    assert {"Roasting/Second crack.md", "Beans/Kenya AA.md", "Home.md"} <= one
    assert one < two
    assert "Roasting/First crack.md" not in two


def test_unresolved_links_are_the_deliberate_ones(demo: Vault) -> None:
    unresolved = demo.unresolved_links()
    pairs = {(u["source"], u["target"]) for u in unresolved}
    assert ("Beans/Processing methods.md", "Decaf processes") in pairs
    assert any(
        src == "Roasting/Popcorn popper roasting.md" and "Cold smoke roasting" in t for src, t in pairs
    )
    # links inside %% comments %% and fenced code are not links at all
    sources = {u["source"] for u in unresolved}
    assert "Roasting/Logging roasts.md" not in sources
    assert "Journal/2026-03-14 Roast log.md" not in sources
    assert all({"source", "target", "line"} <= set(u) for u in unresolved)


def test_resolve_link(demo: Vault) -> None:
    assert demo.resolve_link("Roasting/First crack") == "Roasting/First crack.md"
    assert demo.resolve_link("roasting/first crack") == "Roasting/First crack.md"  # case-insensitive
    assert demo.resolve_link("Kenya AA") == "Beans/Kenya AA.md"  # unique basename
    assert demo.resolve_link("1C") == "Roasting/First crack.md"  # alias
    assert demo.resolve_link("Equipment/grinder-burrs.svg") == "Equipment/grinder-burrs.svg"
    assert demo.resolve_link("Does not exist") is None
    # an ambiguous name prefers the linking note's own folder
    assert demo.resolve_link("Troubleshooting", "Brewing/Espresso.md") == "Brewing/Troubleshooting.md"
    assert demo.resolve_link("Troubleshooting", "Roasting/First crack.md") == "Roasting/Troubleshooting.md"


def test_graph_updates_after_refresh(demo_copy: Path) -> None:
    v = Vault(demo_copy)
    assert "New.md" not in v.backlinks("Roasting/First crack.md")
    (demo_copy / "New.md").write_text("links to [[Roasting/First crack]]", encoding="utf-8")
    v.refresh()
    assert "New.md" in v.backlinks("Roasting/First crack.md")


# --- status ---


def test_status_counts(demo: Vault) -> None:
    s = demo.status()
    assert s["vault"] == demo.id
    assert s["root"] == str(demo.root)
    assert s["notes"] == len(demo_note_paths())
    assert s["attachments"] == 1  # the SVG
    assert s["links"] > 100
    assert s["unresolved_links"] == len(demo.unresolved_links()) == 2
    assert s["tags"] > 10
    assert s["index"]["path"]


def test_status_diagnostics_and_problems(demo: Vault) -> None:
    s = demo.status()
    assert s["diagnostics"].get("invalid_frontmatter") == 1
    assert s["diagnostics"].get("empty") == 1
    assert s["diagnostics"].get("frontmatter_only") == 1
    problem_paths = {p["path"] for p in s["problems"]}
    assert "Journal/2026-02-01 Cupping notes.md" in problem_paths
    assert all({"path", "code", "message"} <= set(p) for p in s["problems"])
    # info-level diagnostics (an empty note) are counted but not listed as problems
    assert "Reference/Empty stub.md" not in problem_paths


def test_status_conflicts_name_their_original(demo: Vault) -> None:
    conflicts = demo.status()["conflicts"]
    assert conflicts == [
        {"path": "Brewing/Espresso (conflict 2026-04-02).md", "original": "Brewing/Espresso.md"}
    ]


def test_status_syncthing_conflict_and_orphan(tmp_path: Path) -> None:
    root = write_vault(
        tmp_path / "v",
        {
            "Note.md": "original",
            "Note.sync-conflict-20260102-101010-ABCDEF1.md": "copy",
            "Gone (conflicted copy 2026-01-01).md": "orphan copy",
        },
    )
    conflicts = {c["path"]: c["original"] for c in Vault(root).status()["conflicts"]}
    assert conflicts == {
        "Note.sync-conflict-20260102-101010-ABCDEF1.md": "Note.md",
        "Gone (conflicted copy 2026-01-01).md": None,
    }


def test_status_is_json_serialisable(demo: Vault) -> None:
    import json

    json.dumps(demo.status())


def test_status_reports_symlink_out_as_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("x")
    root = write_vault(tmp_path / "v", {"a.md": "a"})
    try:
        (root / "out.md").symlink_to(outside)
    except OSError:
        pytest.skip("symlinks not supported here")
    v = Vault(root)
    skipped = v.status()["skipped"]
    assert [s["path"] for s in skipped] == ["out.md"]
    assert v.status()["notes"] == 1


def test_hidden_folders_ignored(demo: Vault) -> None:
    # the dummy token in .obsidian and the draft in .trash are never indexed
    assert not any(h.path.startswith(".") for h in demo.search("token", limit=50))
    assert not any(h.path.startswith(".") for h in demo.search("draft", limit=50))
    assert not any(p.startswith(".") for p in demo.list_notes())
