"""The offline provider on a comparison: each side searched for on its own and quoted first."""

from __future__ import annotations

from engine.llm._offline_answer import answer
from engine.llm._offline_compare import compared_sides


def _item(path: str, heading: str | None, text: str) -> dict[str, str | None]:
    target = path[:-3] + (f"#{heading}" if heading else "")
    return {"vault": "v", "path": path, "heading": heading, "text": text, "citation": f"[[{target}]]"}


def test_each_side_is_searched_without_the_other_sides_words() -> None:
    live, source = compared_sides("What are the differences between Live Preview and Source mode?")
    assert (live.query, live.names, live.words, live.aspect) == (
        "live preview",
        ("live preview",),
        ("live", "preview"),
        (),
    )
    assert source.query == "source mode"
    light, dark = compared_sides("Compare light and dark roasts for espresso")
    assert (light.query, light.names, light.aspect) == (
        "light roasts espresso",
        ("light roasts",),
        ("espresso",),
    )
    assert dark.words == ("dark",)
    assert compared_sides("How long should beans rest?") == []


def test_each_side_opens_with_what_its_own_section_says_it_is() -> None:
    context = [
        _item(
            "Views.md",
            "Source mode",
            "### Source mode\n*Source mode* displays all Markdown syntax exactly as "
            "written.\n\nClick the status icon and select **Source mode** to switch to Source mode now.",
        ),
        _item(
            "Views.md",
            "Live Preview",
            "### Live Preview\n*Live Preview* shows formatted text inline while "
            "hiding most Markdown syntax.\n\nTo switch, select **Live Preview** in the menu, 1 click.",
        ),
    ]
    out = answer(
        {"task": "What are the differences between Live Preview and Source mode?", "context": context}
    )
    lines = out.splitlines()
    assert lines[0].startswith("- *Live Preview* shows formatted text inline") and lines[0].endswith(
        "[[Views#Live Preview]]"
    )
    assert lines[1].startswith("- *Source mode* displays all Markdown syntax")


def test_a_side_compared_on_an_aspect_is_quoted_from_a_passage_on_it_not_a_link_label() -> None:
    context = [
        _item(
            "Teams/Accounts.md",
            "Account security",
            "Users of Obsidian Sync and Obsidian Publish who have 2FA enabled confirm their key, 2 times.",
        ),
        _item("Obsidian Publish/Introduction.md", "How to use Obsidian Publish", "- Security and privacy"),
        _item(
            "Obsidian Sync/Security and privacy.md",
            "Encryption",
            "End-to-end encryption keeps your synced notes private and secure.",
        ),
        _item(
            "Obsidian Publish/Security and privacy.md",
            "Passwords",
            "A site password keeps your published site private and secure from visitors.",
        ),
    ]
    out = answer({"task": "Compare Obsidian Sync and Obsidian Publish security", "context": context})
    lines = out.splitlines()
    assert "[[Obsidian Sync/Security and privacy#Encryption]]" in lines[0]
    assert "[[Obsidian Publish/Security and privacy#Passwords]]" in lines[1]


def test_a_side_said_before_a_shared_word_is_named_with_it_or_by_what_defines_it() -> None:
    # "symmetric" alone titles a note on relations; "symmetric encryption" is the side
    sym, asym = compared_sides("What is the difference between symmetric and asymmetric encryption?")
    assert (sym.names, sym.bare, sym.head) == (("symmetric encryption",), "symmetric", ("encryption",))
    assert (asym.names, asym.bare) == (("asymmetric encryption",), "asymmetric")
    context = [
        _item("Math/Symmetric.md", None, "A relation is symmetric when a R b implies b R a."),
        _item(
            "Security/Symmetric Cryptography.md",
            None,
            "An encryption algorithm where one symmetric key encrypts and decrypts.",
        ),
    ]
    out = answer(
        {"task": "What is the difference between symmetric and asymmetric encryption?", "context": context}
    )
    assert out.splitlines()[0].endswith("[[Security/Symmetric Cryptography]]")
    # "canvas and graph view": "view" was no shared word; what defines canvas answers for it
    context = [
        _item("Plugins/Canvas.md", "Advanced tips", "Watch the videos on canvas tips, 72 of them."),
        _item("Plugins/Core plugins.md", None, "Canvas is a core plugin for visual note-taking."),
    ]
    out = answer({"task": "Compare canvas and graph view: what is each for?", "context": context})
    assert out.splitlines()[0].startswith("- Canvas is a core plugin")


def test_a_section_headed_by_the_bare_side_in_a_note_about_the_shared_word_answers_for_it() -> None:
    context = [
        _item("Home.md", None, "Processing methods: washed, natural and honey coffees, and how they taste."),
        _item(
            "Beans/Processing methods.md",
            "Natural",
            "Also called dry process. Cherries dry whole in the sun.",
        ),
        _item("Beans/Processing methods.md", "Washed", "Also called wet process. The pulp is removed first."),
    ]
    out = answer({"task": "Compare washed and natural processing", "context": context})
    lines = out.splitlines()
    assert lines[0].endswith("[[Beans/Processing methods#Washed]]")
    assert lines[1].endswith("[[Beans/Processing methods#Natural]]")


def test_a_side_is_what_its_note_says_first_in_a_sentence_not_in_its_fields() -> None:
    """The hub names a plugin's note by its id and shows its name as the first heading; its first lines
    are a template's fields."""
    text = (
        "# Tasks\n\nPlugin ID: `obsidian-tasks-plugin`\nDeveloped by: schemar\n"
        "Links: GitHub repository (https://github.com/x/y) or Open in Obsidian\n\n"
        "Task management for Obsidian.\n"
    )
    context = [
        _item(
            "Plugins/dataview.md", None, "# Dataview\n\nPlugin ID: `dataview`\n\nComplex data views for all."
        ),
        _item("Plugins/obsidian-tasks-plugin.md", None, text),
    ]
    out = answer({"task": "Compare Dataview and Tasks", "context": context})
    assert out.splitlines()[:2] == [
        "- Complex data views for all. [[Plugins/dataview]]",
        "- Task management for Obsidian. [[Plugins/obsidian-tasks-plugin]]",
    ]
