"""The rule that decides whether a ``shad`` kernel cell is Python or a goal (``shad_kernel._cells``)."""

from __future__ import annotations

import builtins

import pytest
from IPython.core.inputtransformer2 import TransformerManager

import shad_kernel
from shad_kernel import Cell, CellKind, classify_cell, goal_magic

GOAL, PYTHON = CellKind.GOAL, CellKind.PYTHON
NAMESPACE = {"x": 1, "df": object(), "roast_log": []}
TRANSFORM = TransformerManager().transform_cell  # IPython's own input transformations, no shell needed


def classify(text: str) -> Cell:
    return classify_cell(
        text, is_defined=lambda name: name in NAMESPACE or hasattr(builtins, name), transform=TRANSFORM
    )


@pytest.mark.parametrize(
    ("text", "kind", "reason"),
    [
        # 1. markers
        ("#py\nroasting", PYTHON, "marker: # python"),
        ("# Python\nSummarize roasting", PYTHON, "marker: # python"),
        ("\n  >> x = 1", GOAL, "marker: >>"),
        (">>roasting", GOAL, "marker: >>"),
        (">>> x = 1", PYTHON, "compiles"),  # a pasted Python prompt, which IPython strips
        # 2. IPython syntax and empty cells
        ("", PYTHON, "empty"),
        ("  \n\t\n", PYTHON, "empty"),
        ("%%shad run --vault v\nSummarize roasting", PYTHON, "IPython syntax"),
        ("  \n%time sum(range(3))", PYTHON, "IPython syntax"),
        ("!pip install pandas numpy", PYTHON, "IPython syntax"),
        ("?x", PYTHON, "IPython syntax"),
        # 3. prose
        ("Summarize roasting", GOAL, "prose"),
        ("What is first crack?", GOAL, "prose"),
        ("How long should I rest beans after roasting, and why?", GOAL, "prose"),
        ("What's first crack", GOAL, "prose"),
        ("Qu'est-ce que la torréfaction ?", GOAL, "prose"),
        ("top 5 roasts", GOAL, "prose"),
        ("# Roasting\nSummarize the notes.\nThen list the beans.", GOAL, "prose"),
        ("print x", GOAL, "prose"),
        ("cd notes", GOAL, "prose"),  # automagic with arguments: the magic needs its % in this kernel
        # 4. questions
        ("What is caffeine?", GOAL, "question"),
        ("roasting?", GOAL, "question"),
        ("Why?", GOAL, "question"),
        ("x?", PYTHON, "compiles"),  # help on a defined name
        ("df.head??", PYTHON, "compiles"),
        ("import math\nmath?", PYTHON, "compiles"),  # help after code
        ("*roast*?", PYTHON, "compiles"),  # wildcard search
        # 5. compiles
        ("roasting", GOAL, "undefined names"),
        ("cold-brew", GOAL, "undefined names"),
        ("roasting and grinding", GOAL, "undefined names"),
        ("What is caffeine", GOAL, "undefined names"),
        ("Summary: roasting", GOAL, "undefined names"),
        ("x", PYTHON, "compiles"),
        ("x + unknown", PYTHON, "compiles"),  # one name is defined: a NameError is the honest answer
        ("help", PYTHON, "compiles"),
        ("print('hello world')", PYTHON, "compiles"),
        ('"""Summarize roasting"""', PYTHON, "compiles"),
        ("x = 1  # why is this here?", PYTHON, "compiles"),
        ("import os\n!echo why?", PYTHON, "compiles"),
        ("files = !ls -la some folder", PYTHON, "compiles"),
        (
            "import numpy as np\nfrom os import path as p\nraise ValueError('a b') from None",
            PYTHON,
            "compiles",
        ),
        ("match x:\n    case 1:\n        pass", PYTHON, "compiles"),
        ("await something()", PYTHON, "compiles"),
        ("for i in range(3):\n    print(i)  # print each one", PYTHON, "compiles"),
        ("# just a comment", PYTHON, "compiles"),
        # 6. code with a syntax error stays Python
        ("def f(:", PYTHON, "syntax error"),
        ("print('hello world'", PYTHON, "syntax error"),
        ("for i in range(3) print(i)", PYTHON, "syntax error"),
    ],
)
def test_rule(text: str, kind: CellKind, reason: str) -> None:
    cell = classify(text)
    assert (cell.kind, cell.reason) == (kind, reason)
    assert bool(cell.goal) is (kind is GOAL)


def test_an_empty_forced_goal_is_still_a_goal() -> None:
    # The magic then says the goal is empty: a clear usage error rather than Python's SyntaxError on ">>".
    assert classify(">>") == Cell(GOAL, goal="", reason="marker: >>")
    assert TRANSFORM(goal_magic("")) == "get_ipython().run_cell_magic('shad', 'run', '\\n')\n"


def test_goal_text_is_the_cell_without_the_marker() -> None:
    assert classify("  Summarize roasting  \n").goal == "Summarize roasting"
    assert classify("\n>> x = 1\ny = 2\n").goal == "x = 1\ny = 2"
    assert classify("What is first crack?").goal == "What is first crack?"


def test_names_count_as_defined_only_when_the_namespace_says_so() -> None:
    def defined(names: set[str]) -> Cell:
        return classify_cell("roasting", is_defined=names.__contains__, transform=TRANSFORM)

    assert defined(set()).kind is GOAL
    assert defined({"roasting"}).kind is PYTHON


def test_ipython_syntax_inside_code_needs_the_transform() -> None:
    # The kernel passes transform_cell: with it "x = !ls" compiles; without, it is a syntax error (step 6).
    assert classify("x = !ls").reason == "compiles"
    cell = classify_cell("x = !ls", is_defined=lambda name: False)
    assert (cell.kind, cell.reason) == (PYTHON, "syntax error")


def test_goal_magic_runs_the_goal_as_the_cell_magic() -> None:
    code = goal_magic("Summarize roasting\nand grinding")
    assert code == "%%shad run\nSummarize roasting\nand grinding"
    assert (
        TRANSFORM(code)
        == "get_ipython().run_cell_magic('shad', 'run', 'Summarize roasting\\nand grinding\\n')\n"
    )


def test_the_rule_is_documented_where_users_look() -> None:
    doc = shad_kernel.__doc__ or ""
    for marker in ("#py", "# python", ">>", "%%shad run", "SyntaxError", "NameError"):
        assert marker in doc
    for marker in ("#py", ">>", "%%shad run", "SyntaxError"):
        assert marker in shad_kernel.RULE
