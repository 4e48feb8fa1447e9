"""``engine.build`` blocks: files out of markdown fenced code blocks that name a path (a model's reply or a
vault note), every way of naming the file, what is not a file, and the change requests beside them."""

from __future__ import annotations

import pytest

from engine.build import CHANGE_REQUEST, FileBlock, blocks_from_notes, change_requests, file_blocks

BODY = "def add(a: int, b: int) -> int:\n    return a + b\n"


def fence(info: str, body: str = BODY, marker: str = "```") -> str:
    return f"{marker}{info}\n{body}{marker}\n"


def only(text: str) -> FileBlock:
    blocks = file_blocks(text)
    assert len(blocks) == 1, blocks
    return blocks[0]


# name: (markdown, path, language)
NAMED_IN_THE_INFO_STRING: dict[str, tuple[str, str, str]] = {
    'title="..."': (fence('python title="pkg/models.py"'), "pkg/models.py", "python"),
    "title='...'": (fence("python title='pkg/models.py'"), "pkg/models.py", "python"),
    "title = spaced": (fence('python title = "pkg/models.py"'), "pkg/models.py", "python"),
    "title with a space in the path": (fence('python title="my pkg/a b.py"'), "my pkg/a b.py", "python"),
    "path=": (fence("python path=pkg/models.py"), "pkg/models.py", "python"),
    "file=": (fence("typescript file=src/models.ts"), "src/models.ts", "typescript"),
    'filename="..."': (fence('python filename="pkg/models.py"'), "pkg/models.py", "python"),
    "title and other attributes": (
        fence('python linenums="1" title="pkg/models.py" hl_lines="2"'),
        "pkg/models.py",
        "python",
    ),
    "bare path after the language": (fence("python pkg/models.py"), "pkg/models.py", "python"),
    "language:path": (fence("python:pkg/models.py"), "pkg/models.py", "python"),
    "upper-case language:path": (fence("Python:pkg/models.py"), "pkg/models.py", "python"),
    "json:path": (fence("json:package.json", '{"name": "x"}\n'), "package.json", "json"),
    "only a path with a folder": (fence("pkg/models.py"), "pkg/models.py", ""),
    "no language, title only": (fence('title="pkg/models.py"'), "pkg/models.py", ""),
}


@pytest.mark.parametrize("case", list(NAMED_IN_THE_INFO_STRING))
def test_a_path_named_in_the_info_string(case: str) -> None:
    text, path, language = NAMED_IN_THE_INFO_STRING[case]
    block = only("Here it is:\n\n" + text + "\nThat is all.\n")
    assert (block.path, block.language) == (path, language)
    assert block.content == text.split("\n", 1)[1].rsplit("```", 1)[0]
    assert block.line == 3  # the opening fence, 1-based


# name: (the line above the fence, path)
NAMED_ON_THE_LINE_ABOVE: dict[str, tuple[str, str]] = {
    "bare": ("pkg/models.py", "pkg/models.py"),
    "backticks": ("`pkg/models.py`", "pkg/models.py"),
    "bold": ("**pkg/models.py**", "pkg/models.py"),
    "bold backticks": ("**`pkg/models.py`**", "pkg/models.py"),
    "heading": ("### pkg/models.py", "pkg/models.py"),
    "heading backticks": ("## `pkg/models.py`", "pkg/models.py"),
    "File:": ("File: pkg/models.py", "pkg/models.py"),
    "file: lower case, backticks": ("file: `pkg/models.py`", "pkg/models.py"),
    "Path:": ("Path: pkg/models.py", "pkg/models.py"),
    "trailing colon": ("`pkg/models.py`:", "pkg/models.py"),
    "a Dockerfile": ("Dockerfile", "Dockerfile"),
    "a Makefile in a heading": ("#### Makefile", "Makefile"),
}


@pytest.mark.parametrize("case", list(NAMED_ON_THE_LINE_ABOVE))
def test_a_path_on_the_line_above_the_block(case: str) -> None:
    above, path = NAMED_ON_THE_LINE_ABOVE[case]
    block = only(f"Intro.\n\n{above}\n```python\n{BODY}```\n")
    assert (block.path, block.language, block.content, block.line) == (path, "python", BODY, 4)


@pytest.mark.parametrize(
    "above, path",
    [("__init__.py", "__init__.py"), ("### __main__.py", "__main__.py"), ("**__init__.py**", "__init__.py")],
)
def test_dunder_names_on_the_line_above(above: str, path: str) -> None:
    assert only(f"{above}\n```python\n{BODY}```\n").path == path


def test_a_path_line_above_may_be_separated_by_one_blank_line_but_not_two() -> None:
    assert only(f"`pkg/a.py`\n\n```python\n{BODY}```\n").path == "pkg/a.py"
    assert file_blocks(f"`pkg/a.py`\n\n\n```python\n{BODY}```\n") == []


@pytest.mark.parametrize(
    "above",
    [
        "Here is the code:",
        "Save this as pkg/a.py:",  # a sentence, not a path line
        "## Python",
        "e.g.",
        "```",  # the closing fence of a previous block
    ],
)
def test_prose_above_a_block_does_not_name_a_file(above: str) -> None:
    assert file_blocks(f"{above}\n```python\n{BODY}```\n") == []


def test_an_info_string_path_wins_over_the_line_above() -> None:
    block = only(f'`pkg/other.py`\n```python title="pkg/a.py"\n{BODY}```\n')
    assert block.path == "pkg/a.py"


@pytest.mark.parametrize(
    "info, comment, body, path",
    [
        ("python", "# path: pkg/a.py", BODY, "pkg/a.py"),
        ("python", "# file: pkg/a.py", BODY, "pkg/a.py"),
        ("python", "  #   filename:   pkg/a.py  ", BODY, "pkg/a.py"),
        ("typescript", "// file: src/x.ts", "export const x = 1;\n", "src/x.ts"),
        ("sql", "-- path: db/schema.sql", "CREATE TABLE t (id INT);\n", "db/schema.sql"),
        ("css", "/* file: web/site.css */", "body { margin: 0; }\n", "web/site.css"),
        ("html", "<!-- file: web/index.html -->", "<p>hi</p>\n", "web/index.html"),
        ("yaml", "# file: .github/workflows/ci.yml", "on: push\n", ".github/workflows/ci.yml"),
    ],
)
def test_a_first_line_comment_names_the_file_and_is_removed(
    info: str, comment: str, body: str, path: str
) -> None:
    block = only(f"```{info}\n{comment}\n{body}```\n")
    assert (block.path, block.language, block.content) == (path, info, body)
    assert comment.strip() not in block.content


def test_a_first_line_comment_alone_gives_an_empty_file() -> None:
    block = only("```python\n# path: pkg/__init__.py\n```\n")
    assert (block.path, block.content) == ("pkg/__init__.py", "")


def test_a_first_line_comment_is_kept_when_the_info_string_names_the_file() -> None:
    block = only(f'```python title="pkg/a.py"\n# path: pkg/b.py\n{BODY}```\n')
    assert block.path == "pkg/a.py"
    assert block.content == f"# path: pkg/b.py\n{BODY}"


def test_a_path_comment_below_the_first_line_does_not_name_the_file() -> None:
    assert file_blocks(f"```python\nimport os\n# path: pkg/a.py\n{BODY}```\n") == []


@pytest.mark.parametrize(
    "text",
    [
        f"```python\n{BODY}```\n",
        f"```\n{BODY}```\n",
        "```bash\npip install shad\n```\n",
        f"```python not a path\n{BODY}```\n",
        f"```a.py\n{BODY}```\n",  # a lone word without a folder could be a language
        "```Dockerfile\nFROM python:3.12\n```\n",  # a language, not a path
    ],
)
def test_a_block_that_names_no_file_is_an_illustration(text: str) -> None:
    assert file_blocks("Some prose.\n\n" + text) == []


def test_several_blocks_in_order_with_their_lines() -> None:
    text = (
        "# Plan\n\n"  # 1-2
        '```python title="pkg/models.py"\nclass User:\n    pass\n```\n\n'  # 3-6
        "An illustration:\n\n```python\nprint('hi')\n```\n\n"  # 8-12
        "`pkg/service.py`\n```python\nfrom pkg.models import User\n```\n"  # 14-17
    )
    blocks = file_blocks(text)
    assert [(b.path, b.line) for b in blocks] == [("pkg/models.py", 3), ("pkg/service.py", 15)]
    assert blocks[0].content == "class User:\n    pass\n"
    assert blocks[1].content == "from pkg.models import User\n"


def test_a_longer_fence_holds_shorter_fences_as_content() -> None:
    inner = f"Install it, then:\n\n```python\n{BODY}```\n"
    block = only(f'````markdown title="docs/usage.md"\n{inner}````\n')
    assert (block.path, block.language, block.content) == ("docs/usage.md", "markdown", inner)


def test_a_titled_block_inside_an_untitled_longer_fence_is_not_a_file() -> None:
    assert file_blocks(f'````markdown\n```python title="pkg/a.py"\n{BODY}```\n````\n') == []


def test_a_shorter_fence_does_not_close_a_longer_one_but_a_longer_fence_does() -> None:
    block = only(f'````python title="pkg/a.py"\n{BODY}```\nx = 1\n`````\nafter\n')
    assert block.content == f"{BODY}```\nx = 1\n"


def test_tilde_fences_and_backticks_do_not_close_each_other() -> None:
    block = only(f'~~~python title="pkg/a.py"\n{BODY}```\n~~~\n')
    assert (block.path, block.content) == ("pkg/a.py", BODY + "```\n")
    block = only(f'```python title="pkg/a.py"\n{BODY}~~~\n```\n')
    assert block.content == BODY + "~~~\n"


def test_a_fence_with_an_info_string_does_not_close_a_block() -> None:
    blocks = file_blocks(f'```python title="pkg/a.py"\n{BODY}```python\ny = 2\n```\n')
    assert len(blocks) == 1
    assert blocks[0].content == f"{BODY}```python\ny = 2\n"


def test_a_fence_may_be_indented_up_to_three_spaces_but_not_four() -> None:
    assert only(f'   ```python title="pkg/a.py"\n{BODY}   ```\n').path == "pkg/a.py"
    assert file_blocks(f'    ```python title="pkg/a.py"\n{BODY}    ```\n') == []


def test_an_indented_fence_inside_a_list_item_is_dedented() -> None:
    block = only('1. Create it:\n   ```python title="pkg/a.py"\n   def f():\n       return 1\n   ```\n')
    assert block.content == "def f():\n    return 1\n"


def test_content_ends_with_exactly_one_newline() -> None:
    assert only('```python title="a.py"\nx = 1\n```\n').content == "x = 1\n"
    assert only('```python title="a.py"\nx = 1\n```').content == "x = 1\n"  # no newline after the fence
    assert only('```python title="a.py"\r\nx = 1\r\n```\r\n').content == "x = 1\n"  # CRLF
    assert only('```python title="a.py"\n```\n').content == ""  # an empty file stays empty
    assert only('```python title="a.py"\n\n    x = 1\n```\n').content == "\n    x = 1\n"  # leading kept


def test_blank_lines_before_the_closing_fence_are_not_kept() -> None:
    assert only('```python title="a.py"\nx = 1\n\n\n```\n').content == "x = 1\n"


def test_an_unclosed_fence_runs_to_the_end_of_the_text() -> None:
    block = only(f'Intro.\n\n```python title="pkg/a.py"\n{BODY}\n# more')
    assert block.content == f"{BODY}\n# more\n"
    assert only('```python title="pkg/a.py"\n').content == ""
    # and the blocks before it are still found
    text = f'```python title="pkg/a.py"\n{BODY}```\n\n```python title="pkg/b.py"\nx = 1\n'
    assert [(b.path, b.content) for b in file_blocks(text)] == [("pkg/a.py", BODY), ("pkg/b.py", "x = 1\n")]


@pytest.mark.parametrize(
    "written, kept",
    [
        ("./pkg/a.py", "pkg/a.py"),
        ("././pkg/a.py", "pkg/a.py"),
        ("pkg/./a.py", "pkg/./a.py"),  # only a leading ./ goes
        ("../escape.py", "../escape.py"),  # kept, so the integrity check can flag it
        ("pkg/../../escape.py", "pkg/../../escape.py"),
        ("/etc/evil.py", "/etc/evil.py"),
        ("Pkg/Models.PY", "Pkg/Models.PY"),
        ("pkg\\win.py", "pkg\\win.py"),
    ],
)
def test_paths_are_kept_as_written_except_a_leading_dot_slash(written: str, kept: str) -> None:
    assert only(f'```python title="{written}"\n{BODY}```\n').path == kept


def test_a_leading_dot_slash_goes_in_every_form() -> None:
    assert only(f"```python ./pkg/a.py\n{BODY}```\n").path == "pkg/a.py"
    assert only(f"`./pkg/a.py`\n```python\n{BODY}```\n").path == "pkg/a.py"
    assert only(f"```python\n# path: ./pkg/a.py\n{BODY}```\n").path == "pkg/a.py"


def test_change_request_blocks_are_not_files_but_requests() -> None:
    text = (
        f'```python title="pkg/a.py"\n{BODY}```\n\n'
        f"```{CHANGE_REQUEST}\nUser needs an email field: str\n```\n\n"
        f'```{CHANGE_REQUEST} title="pkg/contracts.py"\n\n  Add make_user(name) -> User  \n\n```\n'
    )
    assert [b.path for b in file_blocks(text)] == ["pkg/a.py"]
    assert change_requests(text) == ["User needs an email field: str", "Add make_user(name) -> User"]


def test_change_requests_in_the_line_form() -> None:
    text = (
        "I could not finish.\n"
        "CONTRACT_CHANGE_REQUEST: add `email: str` to User\n"
        "**CONTRACT_CHANGE_REQUEST**: rename make to make_user\n"
        "contract_change_request:    \n"  # empty: nothing to request
        "A contract change request: is prose, not a request\n"
    )
    assert change_requests(text) == ["add `email: str` to User", "rename make to make_user"]
    assert file_blocks(text) == []


def test_a_change_request_block_in_the_line_form_is_one_request() -> None:
    text = f"```{CHANGE_REQUEST}\nCONTRACT_CHANGE_REQUEST: add email to User\n```\n"
    assert len(change_requests(text)) == 1


def test_no_change_requests_in_an_ordinary_reply() -> None:
    text = f'```python title="pkg/a.py"\n{BODY}```\n\n```{CHANGE_REQUEST}\n\n```\n'
    assert change_requests(text) == []
    assert change_requests("") == []


def test_blocks_from_notes_keep_the_first_notes_copy_and_cite_it() -> None:
    first = f'```python title="pkg/retry.py"\nFIRST = 1\n```\n\n```python title="pkg/log.py"\n{BODY}```\n'
    second = '```python title="pkg/retry.py"\nSECOND = 2\n```\n\n```python title="pkg/cache.py"\nC = 3\n```\n'
    third = "No code in this note.\n\n```python\nprint('illustration')\n```\n"
    found = blocks_from_notes(
        [("[[Patterns/Retry]]", first), ("[[Patterns/Cache]]", second), ("[[N]]", third)]
    )
    assert [(b.path, b.content, link) for b, link in found] == [
        ("pkg/retry.py", "FIRST = 1\n", "[[Patterns/Retry]]"),
        ("pkg/log.py", BODY, "[[Patterns/Retry]]"),
        ("pkg/cache.py", "C = 3\n", "[[Patterns/Cache]]"),
    ]
    # the order of the notes decides which copy wins
    swapped = blocks_from_notes([("[[Patterns/Cache]]", second), ("[[Patterns/Retry]]", first)])
    assert (swapped[0][0].path, swapped[0][1]) == ("pkg/retry.py", "[[Patterns/Cache]]")
    assert swapped[0][0].content == "SECOND = 2\n"
    assert blocks_from_notes([]) == []


def test_a_path_a_note_gives_twice_is_taken_once_from_its_first_block() -> None:
    note = '```python title="a.py"\nONE = 1\n```\n\n```python title="./a.py"\nTWO = 2\n```\n'
    assert len(file_blocks(note)) == 2  # file_blocks itself keeps both
    found = blocks_from_notes([("[[Note]]", note)])
    assert [(b.path, b.content) for b, _ in found] == [("a.py", "ONE = 1\n")]
