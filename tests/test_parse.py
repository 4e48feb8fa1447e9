"""engine/vault/_parse.py: one note from bytes, tolerantly, the way Obsidian reads it."""

from __future__ import annotations

import hashlib
import json
import random
import re
import tracemalloc
from pathlib import Path, PurePosixPath

import pytest
from _crafted_notes import crafted_notes

from engine.vault._model import Link, Note
from engine.vault._parse import (
    CHUNK_CHARS,
    HUGE_BYTES,
    INDEXED_BODY_CHARS,
    MAX_CHUNKS,
    Chunk,
    _paragraphs,
    _stem,
    _without,
    indexed_text,
    note_type,
    parse_for_index,
    parse_note,
    split_link_text,
)


def parse(text: str, path: str = "Folder/Note.md") -> Note:
    return parse_note(path, text.encode("utf-8"))


def codes(note: Note) -> list[str]:
    return [d.code for d in note.diagnostics]


def targets(note: Note) -> list[str]:
    return [link.target for link in note.links]


def only_link(note: Note) -> Link:
    assert len(note.links) == 1, note.links
    return note.links[0]


# --- basics ----------------------------------------------------------------------------------------------


def test_basic_fields() -> None:
    raw = b"---\ntype: concept\n---\n# Heading\nSome text.\n"
    note = parse_note("Roasting/First crack.md", raw, mtime=123.5)
    assert note.path == "Roasting/First crack.md"
    assert note.title == "First crack"
    assert note.frontmatter == {"type": "concept"}
    assert note.type == "concept"
    assert note.body == "# Heading\nSome text.\n"
    assert note.hash == hashlib.sha256(raw).hexdigest()
    assert note.size == len(raw)
    assert note.mtime == 123.5
    assert note.diagnostics == []


def test_type_property_handles_lists_and_missing() -> None:
    assert parse("---\ntype: [log, daily]\n---\nx").type == "log"
    assert parse("---\ntype: ''\n---\nx").type is None
    assert parse("no frontmatter").type is None


def test_title_keeps_dots_in_name() -> None:
    assert parse("x", path="A/v1.2 release notes.md").title == "v1.2 release notes"


def test_to_dict_is_json_serialisable() -> None:
    note = parse("---\ncreated: 2024-01-02\ntags: [a]\n---\n# H\n[[Link#Sec|alias]] ^blk\n")
    data = json.loads(json.dumps(note.to_dict()))
    assert data["path"] == "Folder/Note.md"
    assert data["links"][0]["target"] == "Link"
    assert data["links"][0]["resolved"] is None  # always present, even when unresolved
    assert "body" not in note.to_dict(body=False)


# --- frontmatter -----------------------------------------------------------------------------------------

INVALID_FM = """---
type: log
created: {{date}}
tags: [journal, cupping]
attendees:
- @barista
- @marta
rating: 4
---
# Cupping

Body with a [[Real link]] and #inline-tag.
"""


def test_invalid_yaml_note_still_loads_with_body_intact() -> None:
    note = parse(INVALID_FM)
    assert note.body == "# Cupping\n\nBody with a [[Real link]] and #inline-tag.\n"
    assert "invalid_frontmatter" in codes(note)
    diag = next(d for d in note.diagnostics if d.code == "invalid_frontmatter")
    assert diag.severity == "warning"
    assert diag.message
    assert targets(note) == ["Real link"]
    assert note.links[0].line == 12  # line in the file, counting the frontmatter
    assert [h.text for h in note.headings] == ["Cupping"]


def test_invalid_yaml_recovers_fields_that_parse_on_their_own() -> None:
    note = parse(INVALID_FM)
    assert note.frontmatter.get("type") == "log"
    assert note.frontmatter.get("tags") == ["journal", "cupping"]
    assert note.frontmatter.get("rating") == 4
    assert "attendees" not in note.frontmatter  # the broken field is dropped, not mangled
    assert "created" not in note.frontmatter
    assert note.tags == ["inline-tag", "journal", "cupping"]
    assert note.type == "log"


def test_invalid_yaml_with_nothing_recoverable() -> None:
    note = parse("---\n: : :\n  - [unclosed\n---\nbody [[A]]\n")
    assert note.frontmatter == {}
    assert "invalid_frontmatter" in codes(note)
    assert note.body == "body [[A]]\n"
    assert targets(note) == ["A"]


@pytest.mark.parametrize(
    ("block", "kind"),
    [("- a\n- b\n", "list"), ("just a string\n", "str"), ("42\n", "int")],
)
def test_frontmatter_that_is_not_a_mapping(block: str, kind: str) -> None:
    note = parse(f"---\n{block}---\nbody [[A]]\n")
    assert note.frontmatter == {}
    assert codes(note) == ["frontmatter_not_mapping"]
    assert kind in note.diagnostics[0].message
    assert note.body == "body [[A]]\n"
    assert targets(note) == ["A"]


def test_unclosed_frontmatter_is_body() -> None:
    text = "---\ntype: x\n\n# Heading\nText [[Link]]\n"
    note = parse(text)
    assert note.frontmatter == {}
    assert codes(note) == ["unclosed_frontmatter"]
    assert note.body == text
    assert targets(note) == ["Link"]
    assert note.links[0].line == 5


def test_empty_frontmatter_block() -> None:
    note = parse("---\n---\nbody [[A]]\n")
    assert note.frontmatter == {}
    assert note.body == "body [[A]]\n"
    assert note.diagnostics == []
    assert note.links[0].line == 3


def test_horizontal_rule_in_body_is_not_frontmatter_end() -> None:
    note = parse("---\n---\nfirst part\n\n---\n\nsecond part\n")
    assert note.body == "first part\n\n---\n\nsecond part\n"
    assert note.diagnostics == []


def test_dashes_that_are_a_rule_not_frontmatter() -> None:
    note = parse("----\ntext\n")
    assert note.frontmatter == {}
    assert note.body == "----\ntext\n"
    assert note.diagnostics == []
    note = parse("Intro\n---\na: 1\n---\n")
    assert note.frontmatter == {}  # frontmatter only counts at the very start


def test_frontmatter_closed_by_dots_or_at_end_of_file() -> None:
    assert parse("---\na: 1\n...\nbody").frontmatter == {"a": 1}
    note = parse("---\na: 1\n---")
    assert note.frontmatter == {"a": 1}
    assert note.body == ""
    assert codes(note) == ["frontmatter_only"]


def test_frontmatter_after_byte_order_mark() -> None:
    note = parse_note("a.md", "\ufeff---\na: 1\n---\nbody".encode())
    assert note.frontmatter == {"a": 1}
    assert note.body == "body"


def test_yaml_dates_become_iso_strings() -> None:
    note = parse("---\ncreated: 2024-01-02\nseen: 2024-01-02 10:20:30\nlist: [2023-12-31]\n---\nx")
    assert note.frontmatter["created"] == "2024-01-02"
    assert note.frontmatter["seen"] == "2024-01-02T10:20:30"
    assert note.frontmatter["list"] == ["2023-12-31"]
    json.dumps(note.frontmatter)  # everything is JSON-safe


def test_frontmatter_values_are_json_safe() -> None:
    note = parse("---\n1: one\nnested: {a: [1, 2.5, true, null]}\nbin: !!binary aGVsbG8=\n---\nx")
    assert note.frontmatter["1"] == "one"  # keys become strings
    assert note.frontmatter["nested"] == {"a": [1, 2.5, True, None]}
    assert note.frontmatter["bin"] == "hello"
    json.dumps(note.frontmatter)


BILLION_LAUGHS = (
    "---\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
    "---\n"
    "Body survives [[Target]].\n"
)


@pytest.mark.timeout(30)
def test_billion_laughs_is_refused_without_blowing_up_memory() -> None:
    tracemalloc.start()
    try:
        note = parse(BILLION_LAUGHS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000  # fully expanded it would be ~9**9 strings
    assert note.frontmatter == {}
    assert "frontmatter_too_large" in codes(note)
    assert next(d for d in note.diagnostics if d.code == "frontmatter_too_large").severity == "error"
    assert note.body == "Body survives [[Target]].\n"
    assert targets(note) == ["Target"]


@pytest.mark.timeout(30)
def test_alias_bomb_inside_otherwise_invalid_yaml_is_skipped_in_recovery() -> None:
    lines = BILLION_LAUGHS.split("\n")
    # nest the bomb under one key, add a good field and a broken line so per-field recovery runs
    bomb = "\n".join("  " + line for line in lines[1:10])
    text = f"---\ngood: yes\nbomb:\n{bomb}\nbroken: @handle\n---\nbody\n"
    tracemalloc.start()
    try:
        note = parse(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000
    assert "invalid_frontmatter" in codes(note)
    assert note.frontmatter == {"good": True}
    assert note.body == "body\n"


@pytest.mark.parametrize(
    "block",
    ["a: &a [*a]\n", "a: &a {b: *a}\n", "a: " + "[" * 3000 + "]" * 3000 + "\n"],
    ids=["recursive-list", "recursive-map", "3000-deep"],
)
def test_recursive_or_absurdly_deep_frontmatter_does_not_crash(block: str) -> None:
    note = parse(f"---\n{block}---\nbody [[A]]\n")
    assert note.frontmatter == {}
    assert "frontmatter_too_large" in codes(note)
    assert targets(note) == ["A"]


def test_moderately_nested_frontmatter_is_kept() -> None:
    note = parse("---\na: {b: {c: {d: [1, [2, [3]]]}}}\n---\nx")
    assert note.frontmatter == {"a": {"b": {"c": {"d": [1, [2, [3]]]}}}}
    assert note.diagnostics == []


# Values YAML builds but no index can hold: they are kept as the text written, with a warning, and
# the note's other fields, tags and links load as usual. (Before: NaN/infinity went into the index as
# invalid JSON, a 5,000-digit integer or a non-existent date raised out of the parser.)
@pytest.mark.parametrize(
    "written",
    [".nan", ".NaN", ".inf", "-.inf", "+.Inf", "1.0e+400", "-2.5e+999"],
)
def test_nan_and_infinity_in_frontmatter_are_kept_as_text(written: str) -> None:
    note = parse(f"---\nscore: {written}\ntags: [a]\nrating: 4.5\n---\nbody [[A]]\n")
    assert note.frontmatter == {"score": written, "tags": ["a"], "rating": 4.5}
    assert codes(note) == ["frontmatter_value_as_text"]
    diag = note.diagnostics[0]
    assert diag.severity == "warning"
    assert "'score'" in diag.message and "not a finite number" in diag.message
    assert note.tags == ["a"] and targets(note) == ["A"]
    json.dumps(note.to_dict(), allow_nan=False)  # strict JSON, what SQLite's JSON functions accept


@pytest.mark.parametrize(
    "written",
    ["9" * 5000, "-" + "1" * 4301, "1_" * 4400 + "1", "0x" + "f" * 4000, "0b" + "1" * 20_000],
    ids=["5000-digits", "negative-4301-digits", "underscores", "hex", "binary"],
)
def test_integer_too_long_to_store_is_kept_as_text(written: str) -> None:
    note = parse(f"---\nbig: {written}\nsmall: 12\nlist: [{written}, 3]\n---\nbody\n")
    assert note.frontmatter == {"big": written, "small": 12, "list": [written, 3]}
    assert codes(note) == ["frontmatter_value_as_text"]
    message = note.diagnostics[0].message
    assert "'big'" in message and "'list'" in message and "too long" in message
    assert len(message) < 300  # the value itself is not repeated in full
    json.dumps(note.to_dict(), allow_nan=False)


def test_large_but_storable_numbers_are_unchanged() -> None:
    note = parse(f"---\na: {2**70}\nb: {'9' * 3000}\nc: 1.5e+300\nd: 0x1F\n---\nx")
    assert note.frontmatter == {"a": 2**70, "b": int("9" * 3000), "c": 1.5e300, "d": 31}
    assert note.diagnostics == []


@pytest.mark.parametrize("written", ["2024-13-45", "2024-02-30", "2024-02-30 25:61:00"])
def test_date_that_does_not_exist_is_kept_as_text(written: str) -> None:
    note = parse(f"---\ncreated: {written}\ntype: log\n---\nbody\n")
    assert note.frontmatter == {"created": written, "type": "log"}
    assert codes(note) == ["frontmatter_value_as_text"]
    assert "not a valid date" in note.diagnostics[0].message


def test_values_kept_as_text_in_otherwise_invalid_yaml_are_reported() -> None:
    note = parse("---\nscore: .nan\ntype: log\nbroken: [unclosed\n---\nbody\n")
    assert note.frontmatter == {"score": ".nan", "type": "log"}
    assert sorted(codes(note)) == ["frontmatter_value_as_text", "invalid_frontmatter"]


def test_frontmatter_only_and_empty_diagnostics() -> None:
    assert codes(parse("---\na: 1\n---\n")) == ["frontmatter_only"]
    assert codes(parse("---\na: 1\n---\n\n  \n")) == ["frontmatter_only"]
    empty = parse_note("Empty.md", b"")
    assert codes(empty) == ["empty"]
    assert empty.body == ""
    assert empty.links == [] and empty.tags == [] and empty.headings == []
    assert codes(parse(" \n\n")) == ["empty"]


# --- wikilinks -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inner", "expected"),
    [
        ("a", ("a", None, None, None)),
        ("a|b", ("a", None, None, "b")),
        ("a#H", ("a", "H", None, None)),
        ("a#^id", ("a", None, "id", None)),
        ("#H", ("", "H", None, None)),
        ("#^id", ("", None, "id", None)),
        ("a#H|b", ("a", "H", None, "b")),
        ("a#^id|b", ("a", None, "id", "b")),
        ("a\\|b", ("a", None, None, "b")),
        ("a#H\\|b", ("a", "H", None, "b")),
        ("Folder/Sub/a.md", ("Folder/Sub/a.md", None, None, None)),
        ("a#Parent#Child", ("a", "Child", None, None)),
        (" a | b ", ("a", None, None, "b")),
        ("a|", ("a", None, None, None)),
        ("a|b|c", ("a", None, None, "b|c")),
    ],
)
def test_split_link_text(inner: str, expected: tuple[str, str | None, str | None, str | None]) -> None:
    assert split_link_text(inner) == expected


@pytest.mark.parametrize(
    ("text", "target", "heading", "block", "alias"),
    [
        ("[[a]]", "a", None, None, None),
        ("[[a|b]]", "a", None, None, "b"),
        ("[[a#H]]", "a", "H", None, None),
        ("[[a#^id]]", "a", None, "id", None),
        ("[[#H]]", "", "H", None, None),
        ("[[a#H|b]]", "a", "H", None, "b"),
        ("[[Folder/a]]", "Folder/a", None, None, None),
        ("[[a.md]]", "a.md", None, None, None),
        ("[[Café notes]]", "Café notes", None, None, None),
    ],
)
def test_wikilink_forms(
    text: str, target: str, heading: str | None, block: str | None, alias: str | None
) -> None:
    link = only_link(parse(f"Before {text} after.\n"))
    assert (link.target, link.heading, link.block, link.alias) == (target, heading, block, alias)
    assert link.kind == "wikilink"
    assert link.embed is False
    assert link.line == 1


def test_escaped_pipe_in_table() -> None:
    note = parse("| Method | Ratio |\n| --- | --- |\n| [[Brewing/Pour-over\\|pour-over]] | 1:16 |\n")
    link = only_link(note)
    assert link.target == "Brewing/Pour-over"
    assert link.alias == "pour-over"
    assert link.line == 3


def test_escaped_pipe_with_heading_in_table() -> None:
    link = only_link(parse("| [[Note#Sec\\|label]] | x |\n"))
    assert (link.target, link.heading, link.alias) == ("Note", "Sec", "label")


def test_several_links_in_order_with_line_numbers() -> None:
    text = "---\ntitle: t\n---\nfirst [[A]] and [[B]]\n\n\nthird ![[C]] and [d](D.md)\n"
    note = parse(text)
    assert [(link.target, link.line) for link in note.links] == [("A", 4), ("B", 4), ("C", 7), ("D.md", 7)]


def test_line_numbers_without_frontmatter() -> None:
    note = parse("[[One]]\ntwo\n[[Three]]\n")
    assert [link.line for link in note.links] == [1, 3]


def test_links_do_not_span_lines_or_nest() -> None:
    assert parse("[[broken\nlink]]").links == []
    assert parse("[[]]").links == []


def test_embeds() -> None:
    note = parse("![[diagram.png]]\n![[Other note#Section|shown]]\n[[plain]]\n")
    assert [(link.target, link.embed) for link in note.links] == [
        ("diagram.png", True),
        ("Other note", True),
        ("plain", False),
    ]
    assert note.links[1].heading == "Section"
    assert [link.target for link in note.embeds] == ["diagram.png", "Other note"]


# --- markdown links --------------------------------------------------------------------------------------


def test_markdown_link_is_decoded_with_heading() -> None:
    link = only_link(parse("See [the note](Note%20Name.md#Sec) here.\n"))
    assert link.kind == "markdown"
    assert link.target == "Note Name.md"
    assert link.heading == "Sec"
    assert link.alias == "the note"
    assert link.embed is False


@pytest.mark.parametrize(
    ("text", "target", "heading", "block", "embed"),
    [
        ("[t](Folder/Note.md)", "Folder/Note.md", None, None, False),
        ("[t](<With Space.md>)", "With Space.md", None, None, False),
        ('[t](Note.md "a title")', "Note.md", None, None, False),
        ("[t](Note.md#^blk)", "Note.md", None, "blk", False),
        ("![alt](img/pic.png)", "img/pic.png", None, None, True),
        ("see!![alt](img/pic.png)", "img/pic.png", None, None, True),
        ("a ! [alt](img/pic.png)", "img/pic.png", None, None, False),
        ("[t](#Local%20heading)", "", "Local heading", None, False),
    ],
)
def test_markdown_internal_link_forms(
    text: str, target: str, heading: str | None, block: str | None, embed: bool
) -> None:
    link = only_link(parse(text + "\n"))
    assert (link.target, link.heading, link.block, link.embed, link.kind) == (
        target,
        heading,
        block,
        embed,
        "markdown",
    )


@pytest.mark.parametrize(
    "text",
    [
        "[site](https://example.com/page.md)",
        "[site](http://example.com)",
        "[mail](mailto:someone@example.com)",
        "[app](obsidian://open?vault=x&file=y)",
        "![remote](https://example.com/img.png)",
        "[empty anchor](#)",
    ],
)
def test_external_markdown_links_are_not_links(text: str) -> None:
    assert parse(text + "\n").links == []


# --- links in frontmatter and typed relations ------------------------------------------------------------


def test_links_inside_frontmatter_values() -> None:
    note = parse(
        "---\n"
        'up: "[[Parent]]"\n'
        'related: ["[[A]]", "[[B|bee]]", "plain text"]\n'
        'nested: {deep: ["[[C#Sec]]"]}\n'
        'sentence: "see [[D]] and [[E]]"\n'
        "---\nbody\n"
    )
    fm = [(link.target, link.field, link.kind) for link in note.links]
    assert fm == [
        ("Parent", "up", "frontmatter"),
        ("A", "related", "frontmatter"),
        ("B", "related", "frontmatter"),
        ("C", "nested", "frontmatter"),
        ("D", "sentence", "frontmatter"),
        ("E", "sentence", "frontmatter"),
    ]
    assert note.links[2].alias == "bee"
    assert note.links[3].heading == "Sec"
    assert all(not link.embed for link in note.links)


def test_body_links_come_before_frontmatter_links() -> None:
    note = parse('---\nup: "[[Parent]]"\n---\n[[Body]]\n')
    assert [(link.target, link.kind) for link in note.links] == [
        ("Body", "wikilink"),
        ("Parent", "frontmatter"),
    ]


@pytest.mark.parametrize("field", ["derived_from", "supports", "contradicts", "references", "part_of"])
def test_plain_string_typed_relation_is_a_link(field: str) -> None:
    note = parse(f"---\n{field}: Some Note\n---\nbody\n")
    link = only_link(note)
    assert (link.target, link.kind, link.field) == ("Some Note", "frontmatter", field)


def test_plain_string_list_typed_relation() -> None:
    note = parse("---\nsupports: [First claim, Folder/Second claim]\n---\nx")
    assert [(link.target, link.field) for link in note.links] == [
        ("First claim", "supports"),
        ("Folder/Second claim", "supports"),
    ]


def test_unquoted_wikilink_in_relation_field() -> None:
    # YAML reads an unquoted [[X]] as a nested list; for relation fields the name still counts
    note = parse("---\npart_of: [[Roasting stages]]\n---\nx")
    assert [(link.target, link.field) for link in note.links] == [("Roasting stages", "part_of")]


def test_plain_strings_in_other_fields_are_not_links() -> None:
    note = parse("---\nstatus: Some Note\nauthor: Jane\ntype: concept\n---\nx")
    assert note.links == []


def test_urls_in_relation_fields_are_not_links() -> None:
    note = parse("---\nreferences: [https://example.com/paper, '[[Real source]]']\n---\nx")
    assert targets(note) == ["Real source"]


# --- code and comments -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        "```\n[[Code link]] #codetag\n```\n",
        "```python\n# see [[Code link]] #codetag\n```\n",
        "~~~\n[[Code link]] #codetag\n~~~\n",
        "````\n```\n[[Code link]] #codetag\n```\n````\n",  # a shorter fence does not close a longer one
        "~~~~\n[[Code link]]\n~~~\n#codetag\n~~~~\n",
        "```\n~~~\n[[Code link]] #codetag\n~~~\n```\n",  # tildes do not close backticks
        "   ```\n[[Code link]] #codetag\n   ```\n",  # up to three spaces of indent
        "```\n    ```\n[[Code link]] #codetag\n```\n",  # four spaces of indent do not close it
        "```\n``` x\n[[Code link]] #codetag\n```\n",  # nor a fence with text after it
        "```\nx ```\n[[Code link]] #codetag\n``` \t\n",  # nor text before; spaces after are fine
        "```\n[[Code link]] #codetag\n \t`````\n",  # a longer fence closes, indent may be tabs
    ],
)
def test_fenced_code_hides_links_tags_headings(block: str) -> None:
    note = parse(f"[[Before]]\n{block}[[After]] #real\n# Real heading\n")
    assert targets(note) == ["Before", "After"]
    assert note.tags == ["real"]
    assert [h.text for h in note.headings] == ["Real heading"]


def test_fenced_code_hides_headings_and_block_ids() -> None:
    note = parse("```\n# Not a heading\ntext ^not-a-block\n```\n")
    assert note.headings == []
    assert note.blocks == {}


def test_unclosed_fence_hides_rest_of_note() -> None:
    note = parse("[[Before]]\n```\n[[Inside]]\n")
    assert targets(note) == ["Before"]


def test_fence_lines_after_code_keep_line_numbers() -> None:
    note = parse("```\none\ntwo\n```\n[[After]]\n")
    assert note.links[0].line == 5


@pytest.mark.parametrize(
    "text",
    [
        "`[[Code]]` and `#codetag`",
        "``[[Code]] ` #codetag``",
        "use `![[Code]]` to embed",
        "x ```[[Code]] `` #codetag```",
        "``[[Code]]``` #codetag``",
    ],
)
def test_inline_code_hides_links_and_tags(text: str) -> None:
    note = parse(text + " but [[Real]] #real\n")
    assert targets(note) == ["Real"]
    assert note.tags == ["real"]


def test_single_line_comment() -> None:
    note = parse("%% hidden [[Hidden]] #hidden %%\nvisible [[Seen]]\n")
    assert targets(note) == ["Seen"]
    assert note.tags == []
    assert note.links[0].line == 2


def test_inline_comment_between_text() -> None:
    note = parse("a %%[[Hidden]]%% b [[Seen]] %% #nope %% c #yes\n")
    assert targets(note) == ["Seen"]
    assert note.tags == ["yes"]


def test_multi_line_comment() -> None:
    note = parse("start\n%%\n[[Hidden]]\n# Hidden heading\n#hiddentag ^hidden-block\n%%\n[[Seen]]\n")
    assert targets(note) == ["Seen"]
    assert note.links[0].line == 7
    assert note.headings == []
    assert note.tags == []
    assert note.blocks == {}


def test_unclosed_comment_hides_rest() -> None:
    note = parse("[[Seen]]\n%% never closed\n[[Hidden]]\n")
    assert targets(note) == ["Seen"]


def test_comment_marker_inside_inline_code_does_not_start_a_comment() -> None:
    note = parse("Wrap text in `%%` to hide it. See [[Real]] and #tag.\n\nMore [[Also real]]\n")
    assert targets(note) == ["Real", "Also real"]
    assert note.tags == ["tag"]


def test_comment_marker_inside_fenced_code_does_not_start_a_comment() -> None:
    note = parse("```\n%%\n```\n[[Real]]\n")
    assert targets(note) == ["Real"]


def test_comments_and_code_stay_in_body() -> None:
    text = "%% c [[H]] %%\n```\n[[K]]\n```\n"
    assert parse(text).body == text  # excluded from extraction, not deleted


# --- headings --------------------------------------------------------------------------------------------


def test_headings_levels_text_lines_offsets() -> None:
    text = "---\na: 1\n---\n# One\ntext\n## Two ##\n### Three ^three-id\n#### Four\n##### Five\n###### Six\n"
    note = parse(text)
    assert [(h.level, h.text, h.line) for h in note.headings] == [
        (1, "One", 4),
        (2, "Two", 6),
        (3, "Three", 7),
        (4, "Four", 8),
        (5, "Five", 9),
        (6, "Six", 10),
    ]
    for h in note.headings:
        assert note.body[h.offset :].startswith("#" * h.level + " ")
    assert note.blocks == {"three-id": 7}  # the stripped ^id is still a block id


@pytest.mark.parametrize("line", ["####### Seven", "#NoSpace", "text # not at start", "    # indented code"])
def test_not_headings(line: str) -> None:
    assert parse(line + "\n").headings == []


def test_heading_keeps_inner_hashes_and_strips_trailing_spaces() -> None:
    note = parse("## C# tips   \n")
    assert [h.text for h in note.headings] == ["C# tips"]


def test_repeated_headings_are_all_listed() -> None:
    note = parse("## Tasting notes\na\n## Tasting notes\nb\n")
    assert [(h.text, h.line) for h in note.headings] == [("Tasting notes", 1), ("Tasting notes", 3)]


# --- block ids -------------------------------------------------------------------------------------------


def test_block_ids() -> None:
    text = "Paragraph one. ^para-1\n\n- list item ^item2\n\n> quote\n\n^own-line\n"
    note = parse(text)
    assert note.blocks == {"para-1": 1, "item2": 3, "own-line": 7}


@pytest.mark.parametrize("line", ["x^notablock", "^id followed by text", "2^10 is 1024", "`code ^inline`"])
def test_not_block_ids(line: str) -> None:
    assert parse(line + "\n").blocks == {}


# --- tags ------------------------------------------------------------------------------------------------


def test_inline_tags() -> None:
    note = parse("#start of line, middle #tag, nested #area/sub-topic and #under_score.\n#Mixed\n")
    assert note.tags == ["start", "tag", "area/sub-topic", "under_score", "mixed"]


@pytest.mark.parametrize(
    "text",
    [
        "#123",
        "issue #42 closed",
        "# Heading",
        "a#b",
        "https://example.com/page#section",
        "https://example.com/#/route",
        "https://example.com/#section",
        "[link](https://example.com/a#frag)",
        "[same note](#Some%20heading)",
        "[[#Heading]]",
        "[[Note#Heading]]",
        "[[Note|#alias]]",
        "[[Note|about #alias]]",
        "it&#39;s",
        "\\#escaped",
        "`#code`",
        "%% #comment %%",
        "##double",
    ],
)
def test_not_tags(text: str) -> None:
    assert parse(text + "\n").tags == []


def test_tag_with_digits_after_letters_or_leading_digits() -> None:
    assert parse("#y2024 #2024review\n").tags == ["y2024", "2024review"]


def test_tags_are_unique_and_lowercased() -> None:
    assert parse("#Coffee #coffee #COFFEE\n").tags == ["coffee"]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("tags: [One, two, area/sub]\n", ["one", "two", "area/sub"]),
        ("tags:\n  - a\n  - b\n", ["a", "b"]),
        ("tags: single\n", ["single"]),
        ("tags: one, two three\n", ["one", "two", "three"]),
        ("tags: ['#hashed', '#x/y']\n", ["hashed", "x/y"]),
        ("tags: '#hashed'\n", ["hashed"]),
        ("tag: solo\n", ["solo"]),
        ("tags: [a, null, '']\n", ["a"]),
        ("tags:\n", []),
    ],
)
def test_frontmatter_tags(block: str, expected: list[str]) -> None:
    assert parse(f"---\n{block}---\nbody\n").tags == expected


def test_inline_and_frontmatter_tags_merge_without_duplicates() -> None:
    note = parse("---\ntags: [coffee, roasting]\n---\n#coffee and #espresso\n")
    assert sorted(note.tags) == ["coffee", "espresso", "roasting"]
    assert len(note.tags) == 3


# --- aliases ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("aliases: [DTR, Development time ratio]\n", ["DTR", "Development time ratio"]),
        ("aliases:\n  - One\n  - Two\n", ["One", "Two"]),
        ("aliases: Just one, with a comma\n", ["Just one, with a comma"]),
        ("alias: Single\n", ["Single"]),
        ("alias: [X, Y]\n", ["X", "Y"]),
        ("aliases: [A]\nalias: B\n", ["A", "B"]),
        ("aliases: [A, A]\n", ["A"]),
        ("aliases: [2024, '']\n", ["2024"]),
        ("aliases:\n", []),
    ],
)
def test_aliases(block: str, expected: list[str]) -> None:
    assert parse(f"---\n{block}---\nbody\n").aliases == expected


def test_no_aliases_without_frontmatter() -> None:
    assert parse("aliases: [x]\n").aliases == []


# --- encodings, binary, size, line endings ---------------------------------------------------------------


def test_non_utf8_gets_diagnostic_and_replacement() -> None:
    raw = "Café [[Link]] #tag\n".encode("latin-1")
    note = parse_note("a.md", raw)
    assert codes(note) == ["non_utf8"]
    assert "\ufffd" in note.body
    assert note.body.startswith("Caf")
    assert targets(note) == ["Link"]
    assert note.tags == ["tag"]
    assert note.hash == hashlib.sha256(raw).hexdigest()


def test_utf16_file_without_bom_is_diagnosed_not_crashed() -> None:
    note = parse_note("a.md", "hello [[x]]".encode("utf-16-le"))  # has NUL bytes
    assert "binary" in codes(note)


@pytest.mark.parametrize(
    "raw", [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR[[x]]", b"\x00" * 100, b"text\x00[[x]]\n"]
)
def test_binary_content_is_diagnosed(raw: bytes) -> None:
    note = parse_note("image.md", raw)
    assert "binary" in codes(note)
    assert next(d for d in note.diagnostics if d.code == "binary").severity == "error"
    assert note.links == []
    assert note.body == ""
    assert note.size == len(raw)


def test_crlf_line_endings() -> None:
    raw = (
        b"---\r\ntags: [x]\r\n---\r\n# Heading\r\nText [[A]] ^blk\r\n```\r\n[[Code]]\r\n```\r\n"
        b"[[After]] #tag\r\n"
    )
    note = parse_note("a.md", raw)
    assert note.frontmatter == {"tags": ["x"]}
    assert [h.text for h in note.headings] == ["Heading"]
    assert [(link.target, link.line) for link in note.links] == [("A", 5), ("After", 9)]
    assert note.blocks == {"blk": 5}
    assert note.tags == ["tag", "x"]
    assert note.hash == hashlib.sha256(raw).hexdigest()


def _huge_text(paragraphs: int = 12_000) -> str:
    para = "Lorem ipsum dolor sit amet, roast coffee beans evenly for a balanced cup of coffee.\n\n"
    return "# Big\n" + para * paragraphs + "Last line [[End link]] #endtag\n"


def test_huge_note_gets_diagnostic_but_is_fully_parsed() -> None:
    text = _huge_text()
    raw = text.encode()
    assert len(raw) >= HUGE_BYTES
    note = parse_note("Big.md", raw)
    assert "huge" in codes(note)
    assert targets(note) == ["End link"]
    assert "endtag" in note.tags
    assert note.body == text


def test_just_under_a_megabyte_is_not_huge() -> None:
    raw = b"x" * (HUGE_BYTES - 1)
    assert "huge" not in codes(parse_note("a.md", raw))
    assert "huge" in codes(parse_note("a.md", raw + b"x"))


def test_parse_for_index_caps_indexed_text_of_huge_note() -> None:
    note, chunks = parse_for_index("Big.md", _huge_text(13_000).encode())
    assert len(note.body) > INDEXED_BODY_CHARS
    total = sum(len(c.text) for c in chunks)
    assert INDEXED_BODY_CHARS * 0.9 < total <= INDEXED_BODY_CHARS + len(chunks)
    assert all("End link" not in c.text for c in chunks)  # past the cap
    assert len(chunks) <= MAX_CHUNKS


# --- parse_for_index chunks ------------------------------------------------------------------------------

FILLER = "This sentence is long enough to make a real section of text. "


def test_chunks_without_headings() -> None:
    _note, chunks = parse_for_index("a.md", (FILLER * 3 + "\n").encode())
    assert len(chunks) == 1
    assert chunks[0].heading is None
    assert chunks[0].trail == ""
    assert chunks[0].text.strip() == (FILLER * 3).strip()


def test_chunks_split_at_headings_with_trail() -> None:
    text = (
        f"---\ntype: x\n---\nIntro. {FILLER}\n"
        f"# Top\n{FILLER}\n"
        f"## Child\n{FILLER}\n"
        f"### Grandchild\n{FILLER}\n"
        f"## Sibling\n{FILLER}\n"
        f"# Second top\n{FILLER}\n"
    )
    _note, chunks = parse_for_index("a.md", text.encode())
    assert [(c.heading, c.trail) for c in chunks] == [
        (None, ""),
        ("Top", "Top"),
        ("Child", "Top > Child"),
        ("Grandchild", "Top > Child > Grandchild"),
        ("Sibling", "Top > Sibling"),
        ("Second top", "Second top"),
    ]
    # The properties lead the first passage (as Obsidian shows them above the body); the YAML does not.
    assert chunks[0].text.startswith("type: x\nIntro.")
    assert "---" not in "".join(c.text for c in chunks)
    assert "type: x" not in "".join(c.text for c in chunks[1:])
    assert chunks[2].text.startswith("## Child")


def test_tiny_heading_only_sections_merge_forward() -> None:
    text = f"# Title\n## Empty section\n## Real section\n{FILLER}\n"
    _note, chunks = parse_for_index("a.md", text.encode())
    assert len(chunks) == 1
    assert chunks[0].heading == "Real section"
    assert "# Title" in chunks[0].text and "## Empty section" in chunks[0].text
    assert FILLER.strip() in chunks[0].text


def test_tiny_last_section_is_kept() -> None:
    text = f"# Long\n{FILLER}\n# Short\nok\n"
    _note, chunks = parse_for_index("a.md", text.encode())
    assert [c.heading for c in chunks] == ["Long", "Short"]
    assert "ok" in chunks[-1].text


def test_long_section_is_split_into_passages() -> None:
    paragraphs = [f"Paragraph {i}. " + FILLER * 4 for i in range(40)]
    text = "# Long section\n" + "\n\n".join(paragraphs) + "\n"
    _note, chunks = parse_for_index("a.md", text.encode())
    assert len(chunks) > 5
    assert all(c.heading == "Long section" and c.trail == "Long section" for c in chunks)
    assert all(len(c.text) <= CHUNK_CHARS + 2 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == text.split()  # nothing lost or reordered


def test_one_giant_paragraph_is_split_too() -> None:
    text = "# Wall\n" + FILLER * 200
    _note, chunks = parse_for_index("a.md", text.encode())
    assert len(chunks) > 5
    assert all(len(c.text) <= CHUNK_CHARS + 2 for c in chunks)
    assert "".join(c.text for c in chunks).split() == text.split()  # cut at spaces, nothing lost


def test_comments_left_out_of_indexed_text() -> None:
    text = (
        f"# Section\n{FILLER}\n%% secret planning [[Hidden]] %%\nvisible words\n%%\nmulti\nline secret\n%%\n"
    )
    note, chunks = parse_for_index("a.md", text.encode())
    indexed = "".join(c.text for c in chunks)
    assert "secret" not in indexed
    assert "visible words" in indexed
    assert "secret planning" in note.body  # still in the note itself


def test_html_comments_hold_no_heading_and_are_left_out_of_indexed_text() -> None:
    # A template's unused placeholders (obsidian-hub's people notes): a reader sees none of them.
    text = (
        f"# Ann\n{FILLER}\n<!-- - Sponsor: [[GitHub sponsors]] ^sponsor-->\n"
        "<!--\n### Unlisted plugins\n-->\n## Author of\nvisible words, inline <!-- secret --> too\n"
        "<!--\n## Others\nsecret placeholder [[Hidden]]\n-->\n"
    )
    note, chunks = parse_for_index("a.md", text.encode())
    assert [h.text for h in note.headings] == ["Ann", "Author of"]
    indexed = "".join(c.text for c in chunks)
    assert "secret" not in indexed and "Unlisted" not in indexed and "Sponsor" not in indexed
    assert "visible words, inline" in indexed
    assert [c.heading for c in chunks] == ["Ann", "Author of"]
    assert targets(note) == ["GitHub sponsors", "Hidden"]  # links in them count, as Obsidian counts them
    assert "secret placeholder" in note.body


def test_html_comment_markers_in_code_or_left_open() -> None:
    text = (
        "# A\nWrite `<!--` to start one.\n\n## B\nshown\n\n```\n<!--\n```\n"
        "## C\nshown too <!-- never closed\n## D\nhidden\n"
    )
    note, chunks = parse_for_index("a.md", text.encode())
    assert [h.text for h in note.headings] == ["A", "B", "C"]
    indexed = "".join(c.text for c in chunks)
    assert "shown too" in indexed and "hidden" not in indexed


def test_image_addresses_and_html_tags_are_left_out_of_indexed_text() -> None:
    # obsidian-hub's plugin notes open with badges: a passage of image addresses matched "github stars".
    text = (
        "# Plugin\n![GitHub Repo stars](https://img.shields.io/github/stars/x/y?style=for-the-badge)\n"
        "Links: [GitHub](https://github.com/x/y) or [<button id=HH>Open in Obsidian</button>](obsidian://x)\n"
        '<span class="git-footer">footer words</span> <br> <https://example.com/kept>\n'
        "If a < b > c, a List<String> stays. ![[Diagram.png]]\n"
        "```html\n<div class=shown>code</div> ![alt](in-code.png)\n```\n"
    )
    _note, chunks = parse_for_index("a.md", text.encode())
    indexed = "".join(c.text for c in chunks)
    assert "GitHub Repo stars" in indexed and "shields" not in indexed  # the alt text stays
    assert "Open in Obsidian" in indexed and "button" not in indexed and "<span" not in indexed
    assert "footer words" in indexed and "<br>" not in indexed
    assert "[GitHub](https://github.com/x/y)" in indexed and "<https://example.com/kept>" in indexed
    assert "a < b > c" in indexed and "List<String>" in indexed and "![[Diagram.png]]" in indexed
    assert "<div class=shown>code</div> ![alt](in-code.png)" in indexed  # code is indexed as written


def test_too_many_sections_are_capped() -> None:
    text = "".join(f"## Section {i}\n{FILLER}\n" for i in range(MAX_CHUNKS + 200))
    _note, chunks = parse_for_index("a.md", text.encode())
    assert len(chunks) == MAX_CHUNKS
    assert "Section 1199" in chunks[-1].text  # the rest joins the last passage


def test_empty_note_has_one_empty_chunk() -> None:
    note, chunks = parse_for_index("a.md", b"")
    assert len(chunks) == 1
    assert chunks[0].text == ""
    assert codes(note) == ["empty"]


def test_parse_for_index_returns_same_note_as_parse_note() -> None:
    raw = f"---\ntags: [a]\n---\n# H\n{FILLER}[[L]]\n".encode()
    note, _ = parse_for_index("x/y.md", raw, mtime=5.0)
    assert note == parse_note("x/y.md", raw, mtime=5.0)


# --- the demo vault --------------------------------------------------------------------------------------


def read_demo(demo_vault: Path, rel: str) -> Note:
    return parse_note(rel, (demo_vault / rel).read_bytes())


def test_demo_invalid_frontmatter_note(demo_vault: Path) -> None:
    note = read_demo(demo_vault, "Journal/2026-02-01 Cupping notes.md")
    assert "invalid_frontmatter" in codes(note)
    assert note.body.lstrip("\n").startswith("# 2026-02-01 Cupping notes\n\nCupping session at")
    assert "Slurping loudly really does help." in note.body
    assert note.frontmatter.get("type") == "log"
    assert {"journal", "cupping"} <= set(note.tags)
    assert {"People/Marta Keller", "Beans/Kenya AA"} <= set(targets(note))
    assert [h.text for h in note.headings][:2] == ["2026-02-01 Cupping notes", "Protocol"]


def test_demo_empty_stub(demo_vault: Path) -> None:
    note = read_demo(demo_vault, "Reference/Empty stub.md")
    assert codes(note) == ["empty"]
    assert note.size == 0


def test_demo_frontmatter_only_template(demo_vault: Path) -> None:
    note = read_demo(demo_vault, "Reference/Cupping form template.md")
    assert "frontmatter_only" in codes(note)
    assert note.frontmatter


def test_demo_code_block_link_is_not_extracted(demo_vault: Path) -> None:
    note = read_demo(demo_vault, "Roasting/Logging roasts.md")
    assert "Not a link" not in targets(note)
    assert "not-a-tag" not in note.tags
    assert "Roasting/Development time" in targets(note)
    dtr = next(link for link in note.links if link.target == "Roasting/Development time")
    assert dtr.block == "dtr-rule"
    assert all(link.kind != "markdown" for link in note.links)  # the https link to Artisan is external


def test_demo_comment_link_is_not_extracted(demo_vault: Path) -> None:
    note = read_demo(demo_vault, "Journal/2026-03-14 Roast log.md")
    assert "Hidden link" not in targets(note)
    assert "Beans/Ethiopia Yirgacheffe" in targets(note)
    assert [h.text for h in note.headings].count("Tasting notes") == 2


def test_demo_escaped_table_links(demo_vault: Path) -> None:
    note = read_demo(demo_vault, "Reference/Brew ratios.md")
    table = {link.target: link.alias for link in note.links if link.target.startswith("Brewing/")}
    assert table["Brewing/Pour-over"] == "pour-over"
    assert table["Brewing/French press"] == "French press"
    assert table["Brewing/Cold brew"] == "cold brew"
    assert not any("\\" in t for t in targets(note))
    assert set(note.aliases) == {"Brew chart", "Coffee ratios"}


def test_demo_block_id_and_relations(demo_vault: Path) -> None:
    note = read_demo(demo_vault, "Roasting/Development time.md")
    assert "dtr-rule" in note.blocks
    line = (
        (demo_vault / "Roasting/Development time.md")
        .read_text(encoding="utf-8")
        .splitlines()[note.blocks["dtr-rule"] - 1]
    )
    assert line.rstrip().endswith("^dtr-rule")
    relations = {(link.field, link.target) for link in note.links if link.kind == "frontmatter"}
    assert relations == {("part_of", "Roasting/Roasting stages"), ("references", "People/Scott Rao")}
    assert note.aliases == ["DTR", "Development time ratio"]
    assert "roasting/metrics" in note.tags


def test_demo_embeds(demo_vault: Path) -> None:
    note = read_demo(demo_vault, "Water/Making brew water.md")
    embed = next(link for link in note.embeds if link.target == "Water/Water chemistry")
    assert embed.heading == "Hardness"
    burr = read_demo(demo_vault, "Equipment/Burr grinder.md")
    assert "Equipment/grinder-burrs.svg" in [link.target for link in burr.embeds]


def test_demo_every_note_parses(demo_vault: Path) -> None:
    paths = sorted(demo_vault.rglob("*.md"))
    assert len(paths) >= 30
    for path in paths:
        rel = path.relative_to(demo_vault).as_posix()
        note = parse_note(rel, path.read_bytes())
        json.dumps(note.to_dict())
        assert not any(d.severity == "error" for d in note.diagnostics), (rel, note.diagnostics)


@pytest.mark.parametrize(
    "path",
    [
        "a/b.md",
        "b.md",
        ".md",
        "a/.hidden",
        "a/b.",
        "a/b..md",
        "a/b.c.md",
        "x",
        "a/b/",
        "a//b.md",
        "a/./b.md",
        "a/b/.",
        "/abs/x.md",
        "a/..",
        "a/...",
        "a/.x.md",
        "..md",
        "",
        "Ω/Über uns.MD",
    ],
)
def test_a_notes_title_is_its_file_name_stem_as_pathlib_gives_it(path: str) -> None:
    assert _stem(path) == PurePosixPath(path).stem
    if path:
        assert parse_note(path, b"text").title == PurePosixPath(path).stem


def test_indexed_text_is_the_body_as_its_passages_hold_it() -> None:
    body = "# Title\n\n- GitHub: x ^github\n<!-- - Discord: `@` -->\n- Website: <https://w.x>\n%% b %%\n"
    text = indexed_text(body)
    assert "Discord" not in text and "%%" not in text
    _, chunks = parse_for_index("n.md", body.encode())
    squash = lambda t: " ".join(t.split())  # noqa: E731
    assert squash(text) == squash(" ".join(c.text for c in chunks))


# --- the index's way through a note, checked against the objects' -----------------------------------------


def test_plain_parts_and_passages_are_the_notes_and_chunks() -> None:
    for raw in crafted_notes():
        note, chunks = parse_for_index("D/n.md", raw, mtime=2.0)
        parts, passages = parse_for_index("D/n.md", raw, mtime=2.0, plain=True)
        assert [Chunk(heading, trail, text) for trail, text, heading in passages] == chunks
        assert (parts.title, parts.frontmatter, parts.body, parts.tags, parts.aliases, parts.hash) == (
            note.title,
            note.frontmatter,
            note.body,
            note.tags,
            note.aliases,
            note.hash,
        )
        assert (parts.size, parts.diagnostics) == (note.size, note.diagnostics)
        assert [Link(*link) for link in parts.links] == note.links
        assert [(h[0], h[1], h[3]) for h in parts.headings] == [
            (h.level, h.text, h.offset) for h in note.headings
        ]
        assert note_type(parts.frontmatter) == note.type


def test_note_type_is_the_notes_type_property() -> None:
    for value in [None, "", "x", 3, 0, False, True, [], [""], ["a", "b"], [None], [0], {"a": 1}, 2.5]:
        note = parse("x")
        note.frontmatter = {"type": value}
        assert note_type(note.frontmatter) == note.type
    assert note_type({}) is None


def test_paragraphs_split_where_the_lookbehind_pattern_split() -> None:
    rng = random.Random(5)
    pieces = ["\n", "\n", " ", "\t", "ab", "\r", "\x85", "\u2028", "\x0b", "\x1c"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert _paragraphs(text) == re.split(r"(?<=\n)\s*\n", text), repr(text)


def test_without_skips_spans_that_end_before_the_range() -> None:
    body = "0123456789" * 5
    hidden = sorted([(0, 3), (2, 12), (5, 8), (20, 22), (21, 30), (35, 36), (40, 50)])
    for start in range(0, 50, 3):
        for end in range(start, 51, 4):
            expected = _without(body, start, end, hidden)
            first = 0
            while first < len(hidden) and hidden[first][1] <= start:  # as ``_passages`` skips them
                first += 1
            assert _without(body, start, end, hidden, first) == expected
