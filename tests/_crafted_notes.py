"""Crafted notes for the tests that hold a fast path to the slow one it replaces: the odd cases by hand
(CRLF, a byte order mark, bytes that are not UTF-8, frontmatter left open, code fences, comments, links
in every form) and seeded random notes made of the pieces those are built from."""

from __future__ import annotations

import random

BY_HAND: list[bytes] = [
    s if isinstance(s, bytes) else s.encode("utf-8", "surrogatepass")
    for s in [
        "---\r\ntags: [a, b]\r\ntitle: X\r\n---\r\n# Head\r\ntext [[Link]] #tag\r\n^blk\r\n",
        "\ufeff---\ntags: x\n---\n# H\nbody #t\n",
        b"\xef\xbb\xbf# H\n\xff[[x]]\n",
        b"---\ntitle: caf\xe9\n---\n# H\xff\n[[L\xfeink]] #t\xe9g\n",
        "---\ntags: a\ntitle: b\n# Heading\n[[L]]\n",
        "---\n---\n",
        "---\na: 1\n...\nbody\n",
        "",
        "   \n\n\t\n",
        "---\na:\n  b:\n    c: [1, 2, {d: e}]\nlist:\n  - x\n  - [[Link]]\n  - y: z\n---\nbody\n",
        "---\ncreated: 2024-01-02\nupdated: 2024-01-02 10:11:12\nbad: 2024-13-45\n---\nb\n",
        "---\nx: .nan\ny: .inf\nbig: " + "9" * 5000 + "\n---\nb\n",
        "---\ntitle: ok\nbad: [unclosed\nother: {{date}}\ntags: a b, c\n---\nbody\n",
        '---\ncategories:\n  - "[[People]]"\nbirthday:\norg: []\n'
        "created: {{date}}\nlast: {{date}}\n---\n## M\n",
        "---\ntags:\n  - '#a'\n  - B/c\n  -\n  - \ntag: x, y  z\n"
        "aliases: Foo\nalias: [Bar, '']\n---\n#body\n",
        '---\nderived_from: Other\nsupports: [[A]]\ncontradicts:\n  - "[[B#h]]"\nreferences: https://x\n---\n',
        "---\ntitle: Different\naliases: [A.md, ' b ', C]\ntype: [movie, x]\ndesc: trailing space \n---\nb\n",
        "```python\n# not heading\n[[not link]] #nottag\n^notblock\n```\n"
        "# Real\n~~~\n[[no]]\n~~~~\n[[yes]]\n",
        "text\n```\n[[hidden]] #x\n# h\n",
        "   ```\n[[a]]\n   ```\n    ```\n[[b]]\n```\n``~~~ ```` ~~~\n",
        "%% [[c1]] #ct %%\ntext %% multi\nline [[c2]]\n# no heading %%\n# Heading %%x%%\n%% open [[c3]]\n",
        "<!-- # not heading\n[[html link]] #htmltag -->\n# H\n<!-- unclosed\n# h2\n",
        "text `[[no]]` and ``#no ` tag`` `%%` [[yes]] %% c %% ```x``` `\n`a`\n",
        "# H1 ^abc\n## H2 ##\n###   H3   ###   \n####### no\n#NoHeading\n ## indented\n#\n# \n## C#\n",
        "[[#Heading]] [[#^blk]] [[Note#H#Sub]] [[Note\\|Alias]] ![[Embed.png]] ![[E#h|100]]\n[[a|]] [[]]\n",
        "[t](#h) [t](Note.md) [t](<Note a.md>) [t](N%20X.md#Head) [t](x.md#^b) ![i](a.png) [x](http://a#c)"
        ' [y](mailto:x) [z](#) [w](Note.md "title") [](e.md) [a]( s.md ) ![alt](<b c.png> "t") [a [b](c)',
        "[a](http://x[y](z) [b]( https://w) [c](<https://v>) [d](x:y) [e](1a:b)\n[f](ok.md",
        "#a/b #123 #1a #a-b_c #日本 x#no #tag. [#br] [[N|#al]] [t](#frag) http://x.com/#f &#38; \\#e |#p",
        "[[a|b]] #t1 [[c #t2]] [[d|e #t3]] #t4[[f|g]]#t5 [[h|[x](#y) #t6]]",
        "para ^block1\ntext ^Block-2  \n^solo\nno^id\n- item ^it\n`x`^no\n",
        "![alt text](img.png) <img src=x> <div class=a>in</div> a < b > c List<String> <br/>\n",
        "# Long\n" + ("word " * 400 + "\n\n") * 8 + "## Sub\n" + "x" * 3000 + "\n" + "short\n" * 3,
        "# P\n" + "lorem ipsum dolor " * 2000,
        "".join(f"# H{i}\n" + ("x" if i % 3 else "text " * 20) + "\n" for i in range(1200)),
        "# A\n# B\nshort\n## C\n### D\nthe last one\n",
        "a\r\nb\rc\n# H\r\n[[x]]\r",
        "$[[x]]$ $$\n[[y]]\n$$ #t\n| [[x\\|y]] | #t |\n",
        "[[" * 200 + "]]" * 200 + "[" * 300 + "](" * 100,
        "#" * 3000 + "\n" + "# " * 300 + "\n",
    ]
]

# fmt: off
PIECES = [
    "---\n", "---\n", "...\n", "\n", "\n", "\n\n", "\r\n", " ", "\t", "text ", "word ", "Ünï ", "日本 ",
    "# ", "## ", "###### ", "#", "#tag ", "#a/b ", "#123 ", "#1x ", "x#y ", "&#35; ", "\\#e ", "|",
    "[[", "]]", "[[Note]] ", "![[Emb]] ", "[[N#H]] ", "[[N#^b]] ", "[[N|A]] ", "[[N\\|A]] ", "[[#H]] ",
    "[[N|x #t]] ", "[[a #b]] ", "[t](x.md) ", "[t](#h) ", "![i](a.png) ", "[u](http://x#y) ", "](",
    "[s](<a b.md>) ", "[q](a%20b.md#c) ", "]( http://a) ", "](<http://b>) ", "](mailto:x) ", "[",
    "```\n", "```py\n", "~~~\n", "````\n", "`", "``", "`code` ", "%%", "%% c %%", "<!--", "-->",
    "^blk ", " ^id1\n", "^", "<div>", "</div>", "<br>", "<img src=x>", "a < b > c ", "<span class='x'>",
    "tags: [a, b]\n", "tags:\n  - x\n  - y\n", "aliases: A\n", "title: T\n", "type: movie\n",
    "date: 2024-01-02\n", "n: 1\n", "b: true\n", "u: https://x.y\n", 'l: "[[L]]"\n', "derived_from: X\n",
    "bad: [\n", "created: {{date}}\n", "k:\n", "- item\n", "  - sub\n", "d: {a: 1}\n", "s: some words \n",
    "\ufeff", "\x85", "\u2028", "\xa0", "> ", "- ", "1. ", "|a|b|\n", "$$\n", "=====\n",
]
# fmt: on


def crafted_notes(count: int = 400, seed: int = 1234) -> list[bytes]:
    """The notes by hand, then ``count`` random ones."""
    rng = random.Random(seed)
    notes = list(BY_HAND)
    for _ in range(count):
        parts = [rng.choice(PIECES) for _ in range(rng.randint(1, 60))]
        if rng.random() < 0.4:
            parts.insert(0, "---\n")
            parts.insert(rng.randint(1, len(parts)), "---\n")
        if rng.random() < 0.05:
            parts.append("word " * rng.randint(200, 900) + "\n\n" + "more " * rng.randint(100, 400))
        notes.append("".join(parts).encode("utf-8"))
    return notes
