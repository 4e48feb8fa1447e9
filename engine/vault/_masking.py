"""Blanking what holds no link, tag, heading or block id (fenced and inline code, ``%% comments %%``),
keeping offsets and newlines, and finding what a reader of a note never sees, which the index leaves
out: comments, HTML comments, an image's address (its alt text stays) and HTML tags (their content stays).
"""

from __future__ import annotations

import re

__all__ = ["blank", "delimited_spans", "markup_spans", "mask_code_and_comments", "unseen"]

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*$", re.M)
_FENCE_MARK = re.compile(r"[`~]{3}")
# Opens with a literal backtick (the run's first; the group holds the rest of it): the regex engine then
# jumps from one backtick to the next instead of trying the pattern at every character.
_INLINE_CODE = re.compile(r"`(`*)[^`\n](?:.*?[^`\n])??`\1(?!`)")


def mask_code_and_comments(body: str) -> tuple[str, list[tuple[int, int]]]:
    """Blank out fenced code, ``%% comments %%`` and inline code, keeping offsets and newlines.

    Also returns the comment spans, which the search index leaves out.
    """
    spans: list[tuple[int, int]] = []
    if "```" in body or "~~~" in body:
        pos = 0
        while True:
            opener = _next_fence(body, pos)
            if opener is None:
                break
            fence = opener.group(1)
            end = _fence_end(body, opener.end(), fence[0], len(fence))
            spans.append((opener.start(), end))
            pos = end
    text = blank(body, spans) if spans else body
    if "`" in text:  # before comments: "`%%`" is code, not the start of a comment
        text = blank(text, [m.span() for m in _INLINE_CODE.finditer(text)])
    comments: list[tuple[int, int]] = []
    if "%%" in text:
        comments = delimited_spans(text, "%%", "%%")
        text = blank(text, comments)
    return text, comments


def unseen(body: str, markup: bool) -> tuple[str, str, list[tuple[int, int]]]:
    """``body`` with code and ``%% comments %%`` blanked (where links and tags are found), that with HTML
    comments blanked too (where headings are), and the spans of ``body`` a reader never sees: comments,
    HTML comments and, with ``markup``, image addresses and HTML tags (``markup_spans``)."""
    masked, hidden = mask_code_and_comments(body)
    html_comments = delimited_spans(masked, "<!--", "-->") if "<!--" in masked else []
    visible = blank(masked, html_comments) if html_comments else masked
    hidden += html_comments
    if markup:
        hidden += markup_spans(visible)
    return masked, visible, hidden


def _next_fence(body: str, pos: int) -> re.Match[str] | None:
    """``_FENCE.search(body, pos)``, found faster: the regex, anchored at a line's start, tries every
    character; three backticks or tildes are looked for instead, and only their line is tried."""
    while True:
        mark = _FENCE_MARK.search(body, pos)
        if mark is None:
            return None
        at = mark.start()
        start = max(body.rfind("\n", 0, at) + 1, pos)
        if at - start <= 3 and not body[start:at].strip(" \t"):
            found = _FENCE.match(body, start)
            if found is not None:
                return found
        pos = at + 1


def _fence_end(body: str, pos: int, char: str, length: int) -> int:
    """Where the fence closing a block opened by ``length`` ``char``s ends (its line's end), else the
    body's end: the first line from ``pos`` that is at most three spaces or tabs, ``length`` or more of
    ``char``, then only spaces or tabs. Found as ``re.search(rf"^[ \t]{0,3}{char}{{{length},}}[ \t]*$",
    body[pos:], re.M)`` would, but by looking for the run of ``char``s (the regex, anchored at a line's
    start, tries every character of the code block)."""
    run = char * length
    while (at := body.find(run, pos)) >= 0:
        start = body.rfind("\n", 0, at) + 1
        if start >= pos and at - start <= 3 and not body[start:at].strip(" \t"):
            end = body.find("\n", at)
            end = len(body) if end < 0 else end
            if not body[at:end].rstrip(" \t").strip(char):
                return end
        pos = at + 1
    return len(body)


def delimited_spans(text: str, opener: str, closer: str) -> list[tuple[int, int]]:
    """The spans from each ``opener`` to the ``closer`` after it (one left open runs to the end, as
    Obsidian and a browser read ``%%`` and ``<!--``), found with ``str.find``: a lazy regex steps through
    every character of a long comment."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (start := text.find(opener, pos)) >= 0:
        close = text.find(closer, start + len(opener))
        pos = close + len(closer) if close >= 0 else len(text)
        spans.append((start, pos))
    return spans


# An image in Markdown (its alt text is group 1) and an HTML tag, by the names notes use: "a < b > c" or a
# generic type "List<String>" in prose is not one.
_IMAGE = re.compile(r'!\[([^\]\n]*)\]\(\s*(?:<[^>\n]+>|[^)\s]+)(?:\s+"[^"\n]*")?\s*\)')
_HTML_TAG = re.compile(
    r"</?(?:a|abbr|article|aside|audio|b|blockquote|br|button|center|code|del|details|div|em|figcaption|"
    r"figure|font|footer|h[1-6]|header|hr|i|iframe|img|input|ins|kbd|label|li|main|mark|nav|ol|p|picture|"
    r"pre|q|s|section|small|source|span|strong|sub|summary|sup|table|tbody|td|th|thead|tr|u|ul|video)"
    r"(?![\w-])[^<>\n]*>",
    re.I,
)


def markup_spans(text: str) -> list[tuple[int, int]]:
    """What a reader does not see of ``text`` (code and comments blanked): an image's ``![`` and
    ``](address)`` around its alt text, and HTML tags."""
    spans: list[tuple[int, int]] = []
    if "![" in text:
        for m in _IMAGE.finditer(text):
            spans += [(m.start(), m.start(1)), (m.end(1), m.end())]
    if "<" in text:
        spans += [m.span() for m in _HTML_TAG.finditer(text)]
    return spans


_BLANK_BYTES = bytes(10 if i == 10 else 32 for i in range(256))  # every byte a space but newlines


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        parts.append(text[pos:start])
        segment = text[start:end]
        if "\n" in segment and segment.isascii():  # in C: a drawing's comment can have 100k lines
            parts.append(segment.encode("ascii").translate(_BLANK_BYTES).decode("ascii"))
        elif "\n" in segment:
            parts.append("\n".join(" " * len(line) for line in segment.split("\n")))
        else:
            parts.append(" " * len(segment))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
