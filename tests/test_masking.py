"""``engine/vault/_masking.py``: code and comments blanked in place; what a reader never sees found."""

from __future__ import annotations

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
