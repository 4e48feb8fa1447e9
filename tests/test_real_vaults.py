"""The four real vaults in ``../shared/vaults`` load, index, read and search without a single crash.

The vaults are read in place and never written to; every index goes to a throw-away SHAD_HOME. Each vault
is indexed once per session. Skipped cleanly when ``../shared/vaults`` is absent (a fresh clone).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import Vault, VaultSet
from engine.vault import IndexStats

pytestmark = pytest.mark.real_vaults

SHARED_VAULTS = Path(__file__).resolve().parents[1].parent / "shared" / "vaults"
NAMES = ("obsidian-help", "obsidian-hub", "kepano-obsidian", "zettelkasten-dy")
QUERIES = {
    "obsidian-help": ["sync encryption", "how do I embed a file?", "publish custom domain"],
    "obsidian-hub": ["plugin", "how to contribute to the hub", "dataview"],
    "kepano-obsidian": ["template", "books", "daily note"],
    "zettelkasten-dy": ["USB host controller", "what is active directory?", "network"],
}


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="session")
def real_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SHARED_VAULTS.is_dir():
        pytest.skip(f"real vaults not available: {SHARED_VAULTS} does not exist")
    return tmp_path_factory.mktemp("real_shad_home")


@pytest.fixture(scope="session")
def indexed(real_home: Path) -> Iterator[dict[str, tuple[Vault, IndexStats]]]:
    """Each real vault indexed once per session into its own SHAD_HOME."""
    opened: dict[str, tuple[Vault, IndexStats]] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHAD_HOME", str(real_home))
        for name in NAMES:
            root = SHARED_VAULTS / name
            if not root.is_dir():
                continue
            v = Vault(root)
            v.index  # opened now, while SHAD_HOME points at the session's folder  # noqa: B018
            opened[name] = (v, v.refresh())
    yield opened
    for v, _ in opened.values():
        v.close()


@pytest.fixture(params=NAMES)
def real(request: pytest.FixtureRequest, indexed: dict[str, tuple[Vault, IndexStats]]) -> Vault:
    name = request.param
    if name not in indexed:
        pytest.skip(f"{SHARED_VAULTS / name} is absent")
    return indexed[name][0]


def _vault(indexed: dict[str, tuple[Vault, IndexStats]], name: str) -> Vault:
    if name not in indexed:
        pytest.skip(f"{SHARED_VAULTS / name} is absent")
    return indexed[name][0]


def test_index_is_outside_the_vault(real: Vault, real_home: Path) -> None:
    db = Path(real.index.db_path)
    assert db.is_relative_to(real_home)
    assert not db.is_relative_to(real.root)
    assert not any(p.name.endswith((".sqlite", ".sqlite-wal")) for p in real.root.iterdir())


def test_index_adds_every_note(real: Vault, indexed: dict[str, tuple[Vault, IndexStats]]) -> None:
    stats = indexed[real.root.name][1]
    assert stats.added == len(real.list_notes()) > 0
    assert stats.updated == stats.removed == 0
    again = real.refresh()
    assert again.changed == 0


def test_status_works(real: Vault) -> None:
    s = real.status()
    json.dumps(s)
    assert s["notes"] == len(real.list_notes())
    assert s["links"] > 0
    assert s["unresolved_links"] == len(real.unresolved_links())
    assert isinstance(s["diagnostics"], dict)


def test_every_note_reads(real: Vault) -> None:
    failures = []
    for path in real.list_notes():
        try:
            note = real.read_note(path)
        except Exception as exc:  # the point of the test: report every crash, not just the first
            failures.append(f"{path}: {type(exc).__name__}: {exc}")
            continue
        assert note.path == path
        assert isinstance(note.body, str)
        assert isinstance(note.frontmatter, dict)
    assert failures == []


def test_search_finds_something(real: Vault) -> None:
    for query in QUERIES[real.root.name]:
        hits = real.search(query, limit=5)
        assert hits, query
        for h in hits:
            assert h.vault == real.id and h.path.endswith(".md") and h.title
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_hostile_queries_on_real_vault(real: Vault) -> None:
    for query in ('AND OR NOT NEAR( "unbalanced', "col:val", "*", "-", "how do I"):
        assert isinstance(real.search(query, limit=3), list)


def test_vaults_are_not_modified(indexed: dict[str, tuple[Vault, IndexStats]]) -> None:
    for name in ("obsidian-help", "kepano-obsidian"):
        v = _vault(indexed, name)
        before = _tree(v.root)
        v.refresh()
        v.search("note")
        v.status()
        assert _tree(v.root) == before


def test_help_same_name_in_two_folders(indexed: dict[str, tuple[Vault, IndexStats]]) -> None:
    v = _vault(indexed, "obsidian-help")
    sync = v.read_note("Obsidian Sync/Security and privacy.md")
    publish = v.read_note("Obsidian Publish/Security and privacy.md")
    assert sync.hash != publish.hash
    # a bare link resolves to the note in the linking note's own folder
    from_sync = v.read_note("Obsidian Sync/Headless Sync.md")
    links = [link for link in from_sync.links if link.target == "Security and privacy"]
    assert links and all(link.resolved == "Obsidian Sync/Security and privacy.md" for link in links)
    assert links[0].ambiguous == ["Obsidian Publish/Security and privacy.md"]
    from_publish = v.read_note("Obsidian Publish/Introduction to Obsidian Publish.md")
    links = [link for link in from_publish.links if link.target == "Security and privacy"]
    assert links and all(link.resolved == "Obsidian Publish/Security and privacy.md" for link in links)
    assert v.resolve_link("Security and privacy", "Obsidian Sync/Sync regions.md") == (
        "Obsidian Sync/Security and privacy.md"
    )
    assert "Obsidian Sync/Headless Sync.md" in v.backlinks("Obsidian Sync/Security and privacy.md")
    assert "Obsidian Sync/Headless Sync.md" not in v.backlinks("Obsidian Publish/Security and privacy.md")
    assert v.status()["ambiguous_links"] > 0


def test_hub_invalid_frontmatter(indexed: dict[str, tuple[Vault, IndexStats]]) -> None:
    v = _vault(indexed, "obsidian-hub")
    s = v.status()
    assert s["diagnostics"].get("invalid_frontmatter") == 15
    bad = [p["path"] for p in s["problems"] if p["code"] == "invalid_frontmatter"]
    assert len(bad) == 15
    for path in bad:
        note = v.read_note(path)
        assert "invalid_frontmatter" in {d.code for d in note.diagnostics}
        assert note.body.strip()  # the body is still there


def test_kepano_date_templates_load_with_a_diagnostic(indexed: dict[str, tuple[Vault, IndexStats]]) -> None:
    v = _vault(indexed, "kepano-obsidian")
    templates = [
        p
        for p in v.list_notes("Templates")
        if "created: {{date}}" in (v.root / p).read_text(encoding="utf-8", errors="replace")
    ]
    assert len(templates) >= 10
    for path in templates:
        note = v.read_note(path)
        assert "invalid_frontmatter" in {d.code for d in note.diagnostics}, path
        assert isinstance(note.frontmatter, dict)
    book = v.read_note("Templates/Book Template.md")
    assert book.frontmatter.get("categories") == ["[[Books]]"]  # the fields that parse are kept
    category = [link for link in book.links if link.kind == "frontmatter" and link.field == "categories"]
    assert category and category[0].resolved == "Categories/Books.md"


def test_zettelkasten_problem_notes(indexed: dict[str, tuple[Vault, IndexStats]]) -> None:
    v = _vault(indexed, "zettelkasten-dy")
    s = v.status()
    assert s["notes"] > 13000
    assert s["diagnostics"].get("empty", 0) > 0
    assert s["diagnostics"].get("frontmatter_only", 0) > 0
    assert s["unresolved_links"] > 1000


def test_layered_real_vaults(indexed: dict[str, tuple[Vault, IndexStats]]) -> None:
    help_v, kepano = _vault(indexed, "obsidian-help"), _vault(indexed, "kepano-obsidian")
    vs = VaultSet([help_v, kepano])
    hits = vs.search("template", limit=20)
    assert hits and {h.vault for h in hits} <= set(vs.ids)
    only = vs.search("template", vault="kepano-obsidian", limit=5)
    assert only and {h.vault for h in only} == {"kepano-obsidian"}
    assert vs.read_note("Templates/Book Template.md").vault == "kepano-obsidian"
    assert vs.read_note("Home.md").vault == "obsidian-help"
