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
