"""The offline provider's quotable units of a note's Markdown (``engine.llm._offline_units``)."""

from __future__ import annotations

from engine.llm._offline_units import display_text, passages, quotable_units


def test_a_short_list_is_quoted_with_the_line_that_introduces_it() -> None:
    """ "A collection of:" shows nothing, and "Tools" alone is too short to quote: together they are the
    answer. Long items, nested lists and a line that does not end with ":" stay units of their own."""
    text = (
        "A collection of:\n- AI Model\n- Reasoning loop ([[Chain of Thought]])\n- Tools\n"
        "It acts on its own.\n"
        "Risks:\n- Prompt injection that makes the agent run commands it was never asked to run\n- Leaks\n"
        "Threats:\n- LLM\n\t- Prompt injection\n"
        "- Not introduced\n- by a colon\n"
    )
    assert passages(text) == [
        "A collection of: AI Model; Reasoning loop (Chain of Thought); Tools",
        "It acts on its own.",
        "Prompt injection that makes the agent run commands it was never asked to run",
        "Prompt injection",
        "Not introduced",
        "by a colon",
    ]  # (one-word units, "Risks:", "Leaks", are too short to quote, as before)


def test_a_joined_list_is_marked_as_one_and_links_show_their_labels() -> None:
    text = "Parts:\n- [[CPU|Processor]]\n- Memory bus\n"
    assert display_text(text) == "Parts:\n- Processor\n- Memory bus\n"
    assert quotable_units(text) == [("Parts: Processor; Memory bus", "", False, False, True)]


def test_comments_are_hidden_as_in_reading_view_but_code_is_shown() -> None:
    """ "%% ... %%" and "<!-- -->", on one line or across several, are never quoted; `%%` in code is the
    answer to "how do I write a comment?"."""
    text = (
        "Visible %% hidden %% again.\n"
        "%% Begin Hub: Released contributions %%\n"
        "<!--\n### Unlisted\n- a hidden item\n-->\n"
        "Use `%%` to start a comment, like `%%hidden%%`.\n"
        "%%\n```\ncode in a comment\n```\n%%\n"
        "```\n%% shown in a fence %%\n```\n"
    )
    shown = display_text(text)
    assert len(shown.split("\n")) == len(text.split("\n"))  # line for line
    assert "hidden" not in shown.replace("`%%hidden%%`", "") and "code in a comment" not in shown
    assert "Use `%%` to start a comment, like `%%hidden%%`." in shown
    assert "%% shown in a fence %%" in shown
    assert passages(text)[0] == "Visible  again."


def test_markdown_links_show_their_text_and_web_address() -> None:
    line = (
        "Links: [GitHub repository](https://github.com/x/y) or "
        "[<button id=HH>Open in Obsidian</button>](obsidian://show-plugin?id=y) ![badge](https://img.x/b.svg)"
    )
    shown = "Links: GitHub repository (https://github.com/x/y) or Open in Obsidian"
    assert display_text(line).rstrip() == shown
    assert display_text("Website: <https://kon.foo/>") == "Website: https://kon.foo/"
    assert display_text("Format text into HTML <kbd> tags.") == "Format text into HTML <kbd> tags."


def test_a_glossary_entry_is_quoted_with_its_heading() -> None:
    text = "# Commands\n### `C-a`\nMove to beginning of line\n### `C-e`\nMove to end of line\n"
    units = [u for u, *_ in quotable_units(text)]
    assert units == ["`C-a`: Move to beginning of line", "`C-e`: Move to end of line"]
    # a section of several units, or one under a long heading, is quoted as written
    two = "### Usage\nOpen the app first. Then press the key.\n"
    assert [u for u, *_ in quotable_units(two)] == ["Open the app first.", "Then press the key."]


def test_a_command_right_under_its_heading_is_quoted_with_it() -> None:
    text = "Intro line of the note.\n# Interpreter Installation\n```\nsudo pacman -S clisp\n```\n"
    text += "# Long\n```\n"
    text += "\n".join(f"line {i}" for i in range(5)) + "\n```\n"
    units = [u for u, *_ in quotable_units(text)]
    assert "Interpreter Installation: `sudo pacman -S clisp`" in units
    assert not any("line 0" in u for u in units)  # a longer block is no quote


def test_what_can_be_done_is_quoted_with_the_sentence_that_says_how() -> None:
    text = (
        "You can also set the extension button to open Reader in one click. In the settings go to "
        "**General** → **Behavior** → **Open behavior** and choose **Reader**.\n\n"
        "By default, snapshots are kept for 7 days. You can change it under **Settings** → **Files**.\n"
    )
    units = passages(text)
    assert units[0].startswith("You can also set") and units[0].endswith("choose **Reader**.")
    # a statement followed by a sentence with its own "you can": two things, quoted apart
    assert "By default, snapshots are kept for 7 days." in units
