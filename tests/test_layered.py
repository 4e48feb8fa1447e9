"""``VaultSet``: several vaults in priority order, searched and read as one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _demo import DEMO, write_vault

from engine import Vault, VaultSet
from engine.errors import NoteNotFoundError, UsageError, VaultNotFoundError

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    """Two vaults sharing one identical note plus notes of their own."""
    same = "# Shared\n\nThe quince tart recipe uses quince and butter.\n"
    a = write_vault(
        tmp_path / "work",
        {
            "Shared.md": same,
            "OnlyA.md": "# Only A\n\nA note about quince jelly.",
            "Both/Same name.md": "from work",
            "Projects/Plan.md": "---\ntype: plan\ntags: [proj/alpha]\n---\nquince plan",
        },
    )
    b = write_vault(
        tmp_path / "personal",
        {
            "Shared.md": same,
            "OnlyB.md": "# Only B\n\nquince quince quince: quince everywhere, a quince orchard of quince.",
            "Both/Same name.md": "from personal",
        },
    )
    return a, b


def test_every_hit_carries_its_vault_id(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    hits = vs.search("quince", limit=20)
    assert {h.vault for h in hits} == {"work", "personal"}
    by_vault = {(h.vault, h.path) for h in hits}
    assert ("work", "OnlyA.md") in by_vault
    assert ("personal", "OnlyB.md") in by_vault
    assert ("work", "Shared.md") in by_vault and ("personal", "Shared.md") in by_vault
    assert all(h.vault for h in hits)


def test_ids_default_to_folder_names(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([a, b])  # paths are accepted too
    assert vs.ids == ["work", "personal"]
    assert len(vs) == 2
    assert [v.id for v in vs] == ["work", "personal"]


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path]:
    """Two vaults with the same notes, so BM25 scores the same note the same in each."""
    files = {
        "Tart.md": "# Tart\n\nThe quince tart recipe uses quince and butter.\n",
        "Jam.md": "# Jam\n\nPlum jam, no quince.",
        "Tea.md": "# Tea\n\nGreen tea.",
    }
    return write_vault(tmp_path / "first", files), write_vault(tmp_path / "second", files)


def test_priority_bonus_breaks_ties(twins: tuple[Path, Path]) -> None:
    a, b = twins
    first = Vault(a, id="first")
    plain = first.search('"quince tart"')[0].score
    # Scores are fused ranks, on one scale in every vault: only the priority bonus sets them apart.
    hits = VaultSet([first, Vault(b, id="second")]).search('"quince tart"')
    assert [(h.vault, h.path) for h in hits] == [("first", "Tart.md"), ("second", "Tart.md")]
    assert hits[0].score > hits[1].score
    assert hits[1].score == pytest.approx(plain, rel=1e-3)  # the last vault gets no bonus
    assert hits[0].score == pytest.approx(plain * 1.1, rel=1e-3)  # default bonus: 0.1 per place

    hits = VaultSet([Vault(b, id="second"), Vault(a, id="first")]).search('"quince tart"')
    assert [h.vault for h in hits] == ["second", "first"]


def test_priority_bonus_grows_with_distance_from_last(twins: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = twins
    c = tmp_path / "third"
    shutil.copytree(a, c)
    vs = VaultSet([Vault(a, id="x"), Vault(b, id="y"), Vault(c, id="z")], priority_bonus=0.5)
    hits = [h for h in vs.search("quince tart") if h.path == "Tart.md"]
    assert [h.vault for h in hits] == ["x", "y", "z"]
    assert hits[0].score == pytest.approx(hits[2].score * 2.0, rel=1e-3)
    assert hits[1].score == pytest.approx(hits[2].score * 1.5, rel=1e-3)


def test_no_bonus_means_plain_relevance(twins: tuple[Path, Path]) -> None:
    a, b = twins
    vs = VaultSet([Vault(a, id="first"), Vault(b, id="second")], priority_bonus=0.0)
    hits = vs.search('"quince tart"')
    assert hits[0].score == pytest.approx(hits[1].score)


def test_relevance_still_beats_priority(tmp_path: Path) -> None:
    filler = {f"f{i}.md": f"# F{i}\n\nAn unrelated note number {i} about tea." for i in range(8)}
    a = write_vault(
        tmp_path / "a", {**filler, "weak.md": f"# Weak\n\n{'filler words here. ' * 80} medlar once."}
    )
    b = write_vault(
        tmp_path / "b", {**filler, "Medlar.md": "# Medlar\n\nMedlar, medlar: all about the medlar fruit."}
    )
    hits = VaultSet([Vault(a, id="a"), Vault(b, id="b")]).search("medlar")
    assert [h.vault for h in hits] == ["b", "a"]


def test_merged_scores_descend_and_limit_holds(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    hits = vs.search("quince", limit=3)
    assert len(hits) == 3
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len(vs.search("quince", limit=1)) == 1


def test_per_vault_cap(tmp_path: Path) -> None:
    a = write_vault(tmp_path / "a", {f"a{i}.md": f"pear note {i}" for i in range(6)})
    b = write_vault(tmp_path / "b", {f"b{i}.md": f"pear note {i}" for i in range(6)})
    vs = VaultSet([Vault(a, id="a"), Vault(b, id="b")], per_vault=2)
    hits = vs.search("pear", limit=10)
    assert [h.vault for h in hits].count("a") == 2
    assert [h.vault for h in hits].count("b") == 2
    uncapped = VaultSet([Vault(a, id="a2"), Vault(b, id="b2")]).search("pear", limit=10)
    assert len(uncapped) == 10


def test_duplicate_ids_are_made_unique(tmp_path: Path) -> None:
    a = write_vault(tmp_path / "x" / "notes", {"a.md": "plum"})
    b = write_vault(tmp_path / "y" / "notes", {"b.md": "plum"})
    c = write_vault(tmp_path / "z" / "notes", {"c.md": "plum"})
    vs = VaultSet([a, b, c])
    assert vs.ids == ["notes", "notes-2", "notes-3"]
    assert len(set(vs.ids)) == 3
    hits = vs.search("plum")
    assert {(h.vault, h.path) for h in hits} == {("notes", "a.md"), ("notes-2", "b.md"), ("notes-3", "c.md")}
    explicit = VaultSet([Vault(a, id="same"), Vault(b, id="same")])
    assert explicit.ids == ["same", "same-2"]
    assert explicit.get("same-2").root == b.resolve()


def test_read_note_falls_through_priority(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    note = vs.read_note("Both/Same name.md")
    assert note.vault == "work" and note.body.strip() == "from work"
    note = vs.read_note("OnlyB.md")
    assert note.vault == "personal"
    assert vs.read_note("OnlyB").path == "OnlyB.md"  # .md optional here too
    # reversed priority: the other copy wins
    rev = VaultSet([Vault(b, id="personal"), Vault(a, id="work")])
    assert rev.read_note("Both/Same name.md").vault == "personal"


def test_read_note_with_vault_selection(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    assert vs.read_note("Both/Same name.md", vault="personal").body.strip() == "from personal"
    with pytest.raises(NoteNotFoundError):
        vs.read_note("OnlyA.md", vault="personal")


def test_read_note_by_name_says_which_notes_share_it(tmp_path: Path) -> None:
    a = write_vault(tmp_path / "a", {"One/Plan.md": "# one", "Two/Plan.md": "# two"})
    b = write_vault(tmp_path / "b", {"Other.md": "# other"})
    vs = VaultSet([Vault(b, id="b"), Vault(a, id="a")])
    assert vs.read_note("Other").vault == "b"
    with pytest.raises(NoteNotFoundError) as exc:  # not "no note": which two it could be
        vs.read_note("Plan")
    assert exc.value.candidates == ["One/Plan.md", "Two/Plan.md"]


def test_read_note_missing_everywhere(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    with pytest.raises(NoteNotFoundError) as exc:
        vs.read_note("Nope.md")
    assert "work" in str(exc.value) and "personal" in str(exc.value)


def test_search_vault_selection(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    only = vs.search("quince", vault="personal", limit=20)
    assert only and {h.vault for h in only} == {"personal"}
    chosen = vs.search("quince", vaults=["work"], limit=20)
    assert chosen and {h.vault for h in chosen} == {"work"}
    both = vs.search("quince", vaults=["personal", "work"], limit=20)
    assert {h.vault for h in both} == {"work", "personal"}
    # the priority order is the set's, not the order the caller named them in
    tie = vs.search('"quince tart"', vaults=["personal", "work"])
    assert tie[0].vault == "work"


def test_unknown_vault_id_is_usage_error(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    for call in (
        lambda: vs.search("quince", vault="nope"),
        lambda: vs.search("quince", vaults=["work", "nope"]),
        lambda: vs.read_note("Shared.md", vault="nope"),
        lambda: vs.get("nope"),
        lambda: vs.list_notes(vault="nope"),
    ):
        with pytest.raises(UsageError) as exc:
            call()
        assert "nope" in exc.value.message
        assert exc.value.hint and "work" in exc.value.hint and "personal" in exc.value.hint


def test_empty_set_is_usage_error() -> None:
    with pytest.raises(UsageError):
        VaultSet([])


def test_missing_vault_folder(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError):
        VaultSet([tmp_path / "missing"])


def test_filters_pass_through(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    assert [(h.vault, h.path) for h in vs.search("quince", type="plan")] == [("work", "Projects/Plan.md")]
    assert [(h.vault, h.path) for h in vs.search("quince", tags="proj")] == [("work", "Projects/Plan.md")]
    assert [h.path for h in vs.search("quince", path="Projects")] == ["Projects/Plan.md"]
    assert [h.path for h in vs.search("quince", where={"type": "plan"})] == ["Projects/Plan.md"]
    assert {h.path for h in vs.search("", exclude=["Projects", "Both"], limit=50)} == {
        "Shared.md",
        "OnlyA.md",
        "OnlyB.md",
    }
    assert len(vs.search("quince", modified_after="1990-01-01", limit=50)) == 5
    assert vs.search("quince", modified_before="1990-01-01") == []


def test_list_notes_and_status(two: tuple[Path, Path]) -> None:
    a, b = two
    vs = VaultSet([Vault(a, id="work"), Vault(b, id="personal")])
    listed = vs.list_notes()
    assert ("work", "OnlyA.md") in listed and ("personal", "OnlyB.md") in listed
    assert vs.list_notes(vault="personal") == [
        ("personal", "Both/Same name.md"),
        ("personal", "OnlyB.md"),
        ("personal", "Shared.md"),
    ]
    status = vs.status()
    assert [s["vault"] for s in status["vaults"]] == ["work", "personal"]
    assert [s["notes"] for s in status["vaults"]] == [4, 3]
    vs.close()


@pytest.fixture
def demo_and_mine(tmp_path: Path) -> VaultSet:
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo)
    mine = write_vault(
        tmp_path / "mine",
        {
            "Espresso tips.md": "# Espresso tips\n\nMy espresso tips: dial in with a finer grind.",
            **{f"Other {i}.md": f"# Other {i}\n\nSomething about tea number {i}." for i in range(5)},
        },
    )
    return VaultSet([Vault(mine, id="mine"), Vault(demo, id="demo")])


def test_demo_layered_with_a_private_vault(demo_and_mine: VaultSet) -> None:
    vs = demo_and_mine
    hits = vs.search("espresso", limit=10)
    assert {h.vault for h in hits} == {"mine", "demo"}
    assert any(h.vault == "mine" and h.path == "Espresso tips.md" for h in hits)
    assert vs.read_note("Roasting/First crack.md").vault == "demo"


def test_exact_title_in_priority_vault_ranks_high(demo_and_mine: VaultSet) -> None:
    hits = demo_and_mine.search("espresso tips", limit=10)
    assert ("mine", "Espresso tips.md") in [(h.vault, h.path) for h in hits[:3]]
