"""The vault's template folders (Obsidian's Templates and Templater settings): searchable, never cited."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import run
from engine.retrieval import DirectSearchRetriever
from engine.vault import Vault, VaultSet
from engine.vault._templates import template_folders

MakeVault = Callable[..., Path]
pytestmark = pytest.mark.usefixtures("offline_home")

NOTES = {
    "Places/Kyoto.md": "---\ntype: City\ncoordinates: 35.02, 135.75\n---\n# Kyoto\n\nA city with shrines.\n",
    "Templates/City Template.md": "---\ntype: City\ncoordinates: 35.02, 135.75\n---\n# {{title}}\nA city.\n",
    "Templates Extra/Kept.md": "# Kept\n\nA city note kept outside the templates folder.\n",
}


def _vault(make_vault: MakeVault, settings: dict[str, str] | None = None) -> Path:
    files: dict[str, str] = dict(NOTES)
    for rel, content in (settings or {}).items():
        files[f".obsidian/{rel}"] = content
    return make_vault(files)


def test_the_core_plugin_and_templater_name_the_folders(make_vault: MakeVault) -> None:
    settings = {
        "templates.json": json.dumps({"folder": "/Templates/"}),
        "plugins/templater-obsidian/data.json": json.dumps({"templates_folder": "Places"}),
    }
    assert template_folders(_vault(make_vault, settings)) == ("Templates", "Places")


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        json.dumps(["Templates"]),
        json.dumps({"folder": 7}),
        json.dumps({"folder": "../outside"}),
        json.dumps({"folder": ".obsidian"}),
        json.dumps({"folder": "Missing"}),  # no such folder in the vault
        json.dumps({"folder": ""}),
    ],
)
def test_settings_that_name_no_folder_of_the_vault_are_ignored(make_vault: MakeVault, content: str) -> None:
    assert template_folders(_vault(make_vault, {"templates.json": content})) == ()


def test_a_settings_change_is_read_again(make_vault: MakeVault) -> None:
    root = _vault(make_vault)
    assert template_folders(root) == ()
    (root / ".obsidian").mkdir()
    (root / ".obsidian/templates.json").write_text(json.dumps({"folder": "Templates"}))
    assert template_folders(root) == ("Templates",)


def test_search_shows_templates_unless_retrieval_asks_it_not_to(make_vault: MakeVault) -> None:
    vault = Vault(_vault(make_vault, {"templates.json": json.dumps({"folder": "Templates"})}))
    found = {h.path for h in vault.search("city coordinates")}
    assert "Templates/City Template.md" in found  # what Obsidian's own search shows too
    without = {h.path for h in vault.search("city coordinates", include_templates=False)}
    assert without == {"Places/Kyoto.md", "Templates Extra/Kept.md"}  # a prefix of a name is no folder
    inside = vault.search("city", path="Templates", include_templates=False)
    assert [h.path for h in inside] == ["Templates/City Template.md"]  # asked for by its folder


def test_search_ranks_a_template_below_the_notes_it_makes(make_vault: MakeVault) -> None:
    """A template holds every word of its kind of note and answers nothing: it ranks after them, still
    first when asked for by name or inside its folder."""
    notes = {
        "Places/Kyoto.md": "---\ntype: City\n---\n# Kyoto\n\nOld capital. Coordinates: 35.02, 135.75.\n",
        "Templates/City Template.md": "---\ntype: City\n---\n# {{title}}\nCity coordinates: 0, 0.\n",
        ".obsidian/templates.json": json.dumps({"folder": "Templates"}),
    }
    vault = Vault(make_vault(notes))
    found = [h.path for h in vault.search("city coordinates")]
    assert found == ["Places/Kyoto.md", "Templates/City Template.md"]
    assert vault.search("City Template")[0].path == "Templates/City Template.md"
    assert vault.search("city coordinates", path="Templates")[0].path == "Templates/City Template.md"
    (Path(vault.root) / ".obsidian/templates.json").unlink()  # no template folder: plain ranking again
    assert vault.search("city coordinates")[0].path == "Templates/City Template.md"


def test_retrieval_never_cites_a_template(make_vault: MakeVault) -> None:
    root = _vault(make_vault, {"templates.json": json.dumps({"folder": "Templates"})})
    direct = asyncio.run(DirectSearchRetriever(VaultSet([Vault(root)])).retrieve("city coordinates", "", "n"))
    assert direct.context and all(not c.path.startswith("Templates/") for c in direct.context)
    result = run("What are the coordinates of the city?", str(root), provider="offline")  # Code Mode
    cited = {c["path"] for c in result.summary["citations"]}
    assert "Places/Kyoto.md" in cited and not any(p.startswith("Templates/") for p in cited)
