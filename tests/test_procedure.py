"""``engine.llm._procedure``: the whole numbered list that holds a step, in order, with the note's own
numbers, for "how do I ..." questions."""

from __future__ import annotations

from engine.llm._procedure import MAX_LISTED, MAX_STEPS, listed_items, procedure

RELEASE = """# Releasing
I use GitHub actions to automate this. My workflow looks like this:

- a bullet before the steps
1. Write code and commit it.
2. When I'm ready to release a new version,
   1. Update the `manifest.json` with the right version.
   2. use `git tag <version number>` ^step-tag
3. Push the new tag to GitHub `git push origin --tags`
- This is how a normal process looks like: ![[actions.png]]

Later prose.
"""


def test_the_list_that_holds_a_step_in_order_with_nested_items() -> None:
    assert procedure(RELEASE, "Push the new tag to GitHub `git push origin --tags`") == [
        "1. Write code and commit it.",
        "2. When I'm ready to release a new version,",
        "– Update the `manifest.json` with the right version.",
        "– use `git tag <version number>`",  # its block id left out, as passages quote it
        "3. Push the new tag to GitHub `git push origin --tags`",
    ]
    # a nested item finds its procedure too
    assert procedure(RELEASE, "use `git tag <version number>`")[0] == "1. Write code and commit it."


def test_the_notes_own_numbers_and_links_as_they_show() -> None:
    text = "Intro.\n\n3) Open [[Settings|the settings]].\n\n4) Turn on **Sync**.\n"
    assert procedure(text, "Turn on **Sync**.") == ["3. Open the settings.", "4. Turn on **Sync**."]


def test_no_procedure_where_there_is_none() -> None:
    assert procedure(RELEASE, "a bullet before the steps") == []  # a bullet, not a step
    assert procedure(RELEASE, "Later prose.") == []
    assert procedure("1. Only one step.\n\nProse.\n", "Only one step.") == []
    assert procedure("- a\n- b\n- c\n", "b") == []
    assert procedure("", "anything") == []


def test_a_long_procedure_is_cut() -> None:
    text = "\n".join(f"{i}. Step number {i}." for i in range(1, 40))
    assert procedure(text, "Step number 2.") == [f"{i}. Step number {i}." for i in range(1, MAX_STEPS + 1)]
    around = procedure(text, "Step number 20.")  # the steps around the one asked about
    assert len(around) == MAX_STEPS and "20. Step number 20." in around
    assert procedure(text, "Step number 39.")[-1] == "39. Step number 39."


def test_a_bulleted_list_is_given_whole_top_level_items_in_order() -> None:
    text = "### Plugins\n- [[tag-wrangler|Tag Wrangler]]\n  - nested note\n- [[pane-relief|Pane Relief]]\n"
    text += "\nProse.\n"
    assert listed_items(text, "Pane Relief") == ["Tag Wrangler", "Pane Relief"]
    assert listed_items(text, "Prose.") == [] and listed_items("- only one\n", "only one") == []
    assert listed_items("1. a step\n2. another\n", "a step") == []  # numbered: a procedure, not a list
    long = "\n".join(f"- item {i}" for i in range(40))
    assert len(listed_items(long, "item 3")) == MAX_LISTED
