"""``engine/vault/_masking.py``: code and comments blanked in place; what a reader never sees found."""

from __future__ import annotations

import re

from _crafted_notes import crafted_notes

from engine.vault import _masking
from engine.vault._masking import blank, delimited_spans, markup_spans, mask_code_and_comments, unseen


def test_blank_keeps_every_offset_and_newline() -> None:
    text = "keep %% gone\nstill gone é %% keep"
    out = blank(text, [(5, 29)])
    assert len(out) == len(text) and out.count("\n") == 1
    assert out.startswith("keep ") and out.endswith(" keep") and "gone" not in out


def test_delimited_spans_run_to_the_end_when_left_open() -> None:
    assert delimited_spans("a %% b %% c %% d", "%%", "%%") == [(2, 9), (12, 16)]
    assert delimited_spans("x <!-- y --> z <!-- w", "<!--", "-->") == [(2, 12), (15, 21)]


def test_code_is_masked_before_comments_and_keeps_its_offsets() -> None:
    body = "`%%` is how\n```\n%% not a comment\n```\nafter %% hidden %% end"
    masked, comments = mask_code_and_comments(body)
    assert len(masked) == len(body)
    assert "not a comment" not in masked and "hidden" not in masked and "after" in masked
    assert [body[s:e] for s, e in comments] == ["%% hidden %%"]


def test_markup_spans_leave_alt_text_and_tag_content() -> None:
    text = '![Stars](https://img.example/s.svg "t") <kbd>Ctrl</kbd> a < b > c <https://x.y>'
    kept = "".join(ch for i, ch in enumerate(text) if not any(s <= i < e for s, e in markup_spans(text)))
    assert kept == "Stars Ctrl a < b > c <https://x.y>"


def test_unseen_blanks_code_and_comments_then_html_comments_and_lists_what_a_reader_never_sees() -> None:
    body = "a `#x` %% c %% b\n<!-- ## Hidden -->\n![alt](u.png) <b>bold</b>\n"
    masked, visible, hidden = unseen(body, True)
    assert len(masked) == len(visible) == len(body)
    assert "#x" not in masked and "%%" not in masked and "## Hidden" in masked  # links and tags look here
    assert "## Hidden" not in visible  # headings look here
    cut = "".join(body[a:b] for a, b in sorted(hidden))
    assert "%% c %%" in cut and "<!-- ## Hidden -->" in cut and "](u.png)" in cut and "<b>" in cut
    assert "alt" not in cut and "bold" not in cut
    assert not any("](u.png)" in body[a:b] for a, b in unseen(body, False)[2])  # markup only when asked


# --- the faster ways of finding code, checked against the plain ones on crafted notes ---------------------

_FENCE_MARK = re.compile(r"[`~]{3}")


def _fences_by_regex(body: str) -> list[tuple[int, int]]:
    """The fenced blocks as found before: each mark tried with ``_FENCE``, the block closed by the regex."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        opener = None
        while (mark := _FENCE_MARK.search(body, pos)) is not None:
            start = max(body.rfind("\n", 0, mark.start()) + 1, pos)
            if mark.start() - start <= 3 and not body[start : mark.start()].strip(" \t"):
                opener = _masking._FENCE.match(body, start)
                if opener is not None:
                    break
            pos = mark.start() + 1
        if opener is None:
            return spans
        fence = opener.group(1)
        closing = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        closed = closing.search(body, opener.end() + 1) if opener.end() < len(body) else None
        pos = closed.end() if closed is not None else len(body)
        spans.append((opener.start(), pos))


BODIES = [*(raw.decode("utf-8", "replace") for raw in crafted_notes()), "``~~~\n~~`\n  ~~~~ x\n~~~~\n````"]


def test_fences_are_what_trying_every_mark_with_the_pattern_finds() -> None:
    for body in BODIES:
        assert _masking._fence_spans(body) == _fences_by_regex(body), body


def test_inline_code_is_what_the_lazy_pattern_finds_and_is_blanked_alike() -> None:
    lazy = re.compile(r"`(`*)[^`\n](?:.*?[^`\n])??`\1(?!`)")
    for text in [*BODIES, "`` a ` b `` `c``d` ```e`` `f` ``", "` a `` b ` c", "```" + " a `` b ` c" * 50]:
        spans = [m.span() for m in lazy.finditer(text)]
        assert [m.span() for m in _masking._INLINE_CODE.finditer(text)] == spans
        assert _masking._blank_inline_code(text) == blank(text, spans)


def test_spaces_are_what_backslash_s_matches() -> None:
    every = "".join(map(chr, range(0x110000)))
    assert re.findall(f"[{_masking.SPACES}]", every) == re.findall(r"\s", every)
