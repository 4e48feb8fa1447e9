"""engine/vault/_read.py: each faster way of finding a note's parts finds what the plain way it replaced
finds, on crafted notes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _crafted_notes import crafted_notes

from engine.vault import _read
from engine.vault._masking import unseen
from engine.vault._model import Diagnostic
from engine.vault._read import read_file, read_note

NOTES = crafted_notes()
BODIES = [read_note("n.md", raw).body for raw in NOTES]
MASKED = [unseen(body, True)[0] for body in BODIES]


def test_markdown_links_are_the_regex_matches_tried_at_every_bracket() -> None:
    extra = ["[a [b](c) [d](e)", "[x](y](z) [w](v)", "[](a) [b]\n(c) [c](d [e](f)", "[a](b [c](d))"]
    for text in [*MASKED, *extra]:
        fast = [(m.span(), m.groups()) for m in _read._markdown_links(text)]
        assert fast == [(m.span(), m.groups()) for m in _read._MDLINK_BRACKETS.finditer(text)], text


def test_links_are_the_same_when_no_web_address_is_skipped_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A note whose every Markdown link has a scheme (a web page) keeps none: they are not read at all."""
    fast = [read_note("n.md", raw).links for raw in NOTES]
    monkeypatch.setattr(_read, "_NOTE_ADDRESS", re.compile(r"\]\("))
    assert fast == [read_note("n.md", raw).links for raw in NOTES]
    assert any(b"](http" in raw for raw in NOTES)


def _tags_by_rewriting(masked: str) -> list[str]:
    """How the tags were found before: the links that hold no tag rewritten away, then ``_TAG``."""
    if "#" not in masked:
        return []
    text = _read._MDLINK.sub(" ", masked) if "](#" in masked else masked
    if "|" in text and "[[" in text:
        text = re.sub(r"\[\[([^\[\]\n]+?)\]\]", " ", text)
    return [m.group(1).lower() for m in _read._TAG.finditer(text)]


def test_inline_tags_leave_out_what_rewriting_the_links_away_left_out() -> None:
    extra = ["[[a|b]] #t1 [[c #t2]] [[d|e #t3]] #t4[[f|g]]#t5", "[[h|[x](#y) #t6]] |", "#a [[b|#c]] #d"]
    for masked in [*MASKED, *extra]:
        wikilinks = list(_read._WIKILINK_BRACKETS.finditer(masked))
        fast = _read._inline_tags(masked, wikilinks) if "#" in masked else []
        assert fast == _tags_by_rewriting(masked), masked
    assert _tags_by_rewriting(extra[0]) == ["t1", "t4", "t5"]


_LAZY_HEADING = re.compile(r"(#(?<![^\n]#)#{0,5})[ \t]+(.*?)[ \t]*#*[ \t]*$", re.M)


def test_headings_are_what_the_lazy_pattern_found() -> None:
    extra = ["# a # # \n## C#\n#   \n# ##\n###### x ###  \n# t\t#\t\n#\ta\r\n"]
    for text in [*[unseen(body, False)[1] for body in BODIES], *extra]:
        fast = [(m.span(), m.group(1), _cut(m.group(2))) for m in _read._HEADING.finditer(text)]
        assert fast == [(m.span(), m.group(1), m.group(2)) for m in _LAZY_HEADING.finditer(text)], text


def _cut(heading: str) -> str:
    return heading.rstrip(" \t").rstrip("#").rstrip(" \t")


def test_greedy_wikilink_pattern_matches_as_the_lazy_one() -> None:
    lazy = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
    for text in [*MASKED, "[[a]b]] [[c]]] [[[d]] [[e\n]] [[f]]"]:
        fast = [m.span() for m in _read._WIKILINK_BRACKETS.finditer(text)]
        assert fast == [m.span() for m in lazy.finditer(text)]


def test_decoding_skips_a_byte_order_mark_as_utf_8_sig_does() -> None:
    for raw in [*NOTES, b"\xef\xbb\xbf", b"\xef\xbb", b"\xef\xbb\xbf\xef\xbb\xbfx", b"\xef\xbb\xbfa\xffb"]:
        diagnostics: list[Diagnostic] = []
        text = _read._decode(raw, diagnostics)
        try:
            assert text == raw.decode("utf-8-sig") and not diagnostics
        except UnicodeDecodeError as exc:
            assert text == raw.decode("utf-8", errors="replace")
            assert f"offset {exc.start})" in diagnostics[0].message


def test_read_file_reads_what_open_reads(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    for content in [b"", b"x", b"abc" * 50_000]:
        path.write_bytes(content)
        for size in [0, 1, len(content) - 1, len(content), len(content) + 5]:  # as seen before a change
            assert read_file(str(path), max(size, 0)) == content
    with pytest.raises(IsADirectoryError):
        read_file(str(tmp_path), 0)


def test_without_lines_a_note_is_the_same_but_heading_lines_and_block_ids() -> None:
    for raw in NOTES:
        full, short = read_note("n.md", raw, True), read_note("n.md", raw, True, lines=False)
        assert short._replace(headings=full.headings, blocks=full.blocks) == full
        assert [h[:2] + h[3:] for h in short.headings] == [h[:2] + h[3:] for h in full.headings]
        assert not short.blocks and all(h[2] == 0 for h in short.headings)
