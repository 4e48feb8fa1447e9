"""The rule that decides whether a ``shad`` kernel cell is Python or a goal.

The rule is documented, numbered, in the ``shad_kernel`` package docstring; ``classify_cell`` applies its
steps in that order and names the step that decided in ``Cell.reason``. It needs no kernel: the caller
passes ``is_defined`` and IPython's ``transform_cell``.
"""

from __future__ import annotations

import ast
import enum
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Cell", "CellKind", "classify_cell", "goal_magic"]


class CellKind(enum.Enum):
    """What a cell is: Python code for IPython, or a goal for ``%%shad run``."""

    PYTHON = "python"
    GOAL = "goal"


@dataclass(frozen=True)
class Cell:
    """A classified cell: its kind, the goal text (goals only) and which rule decided."""

    kind: CellKind
    goal: str = ""
    reason: str = ""


_FORCE_PYTHON = re.compile(r"#\s*py(?:thon)?\s*", re.IGNORECASE)
_FORCE_GOAL = re.compile(r"\s*>>(?!>)[ \t]?")
_IPYTHON_START = "%!?"
# Lines IPython rewrites before Python sees them: magics, shell escapes, help, autocall escapes, and
# ``x = !cmd`` / ``x = %magic``. Their arguments are words side by side, so rule 3 must not read them.
_IPYTHON_LINE = re.compile(r"^[ \t]*(?:[%!?/;,]|[\w.,()\[\] \t]*=[ \t]*[!%]).*$", re.MULTILINE)
# Strings and comments, in one alternation so that whichever starts first wins, as in the lexer.
_STRING_OR_COMMENT = re.compile(
    r"""(?:[rRbBuUfF]{1,2})?(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"""
    r"""|"[^"\\\n]*(?:\\.[^"\\\n]*)*")|\#[^\n]*"""
)
# A word or a number, then another, separated by blanks only (``top 5 roasts``); never valid Python.
_WORD_PAIR = re.compile(r"(?<![\w.])([^\W\d]\w*|\d[\w.]*)(?=[ \t]+([^\W\d]\w*|\d[\w.]*))")
_KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {"type", "match", "case", "_"}
_HELP_LINE = re.compile(r"^[ \t]*([\w.*]+)[ \t]*\?{1,2}[ \t]*$")
# Expressions that prose can compile to: names joined by operators, ``and``/``or``/``not``/``in``/``is``.
_PROSE_NODES = (
    ast.Name,
    ast.Load,
    ast.Store,
    ast.BoolOp,
    ast.UnaryOp,
    ast.BinOp,
    ast.Compare,
    ast.Tuple,
    ast.boolop,
    ast.unaryop,
    ast.operator,
    ast.cmpop,
)


def goal_magic(goal: str) -> str:
    """The cell the kernel runs for a goal: the ``%%shad run`` cell magic with the goal as its body."""
    # A blank body still reaches the magic, which says the goal is missing; an empty one would stop in
    # IPython with a note about line magics that makes no sense after a bare ``>>``.
    return "%%shad run\n" + (goal if goal.strip() else "\n")


def classify_cell(
    text: str,
    *,
    is_defined: Callable[[str], bool],
    transform: Callable[[str], str] | None = None,
) -> Cell:
    """Classify ``text`` as Python or a goal (the rule is in ``shad_kernel``'s docstring).

    ``is_defined(name)`` says whether a name exists in the user's namespace or the builtins;
    ``transform`` is IPython's ``shell.transform_cell`` (identity when omitted).
    """
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), "")
    if _FORCE_PYTHON.fullmatch(first.strip()):
        return Cell(CellKind.PYTHON, reason="marker: # python")
    forced = _FORCE_GOAL.match(first)
    if forced:
        start = text.index(first) + forced.end()
        return Cell(CellKind.GOAL, goal=text[start:].strip(), reason="marker: >>")
    stripped = text.strip()
    if not stripped:
        return Cell(CellKind.PYTHON, reason="empty")
    if stripped[0] in _IPYTHON_START:
        return Cell(CellKind.PYTHON, reason="IPython syntax")
    code = _STRING_OR_COMMENT.sub(" ", _IPYTHON_LINE.sub("", text))
    if _has_word_pair(code):
        return Cell(CellKind.GOAL, goal=stripped, reason="prose")
    code_lines = [line for line in code.splitlines() if line.strip()]
    if code_lines and code_lines[-1].rstrip().endswith("?") and not _is_help_request(code_lines, is_defined):
        return Cell(CellKind.GOAL, goal=stripped, reason="question")
    tree = _parse(text, transform)
    if tree is None:
        return Cell(CellKind.PYTHON, reason="syntax error")
    if _only_undefined_names(tree, is_defined):
        return Cell(CellKind.GOAL, goal=stripped, reason="undefined names")
    return Cell(CellKind.PYTHON, reason="compiles")


def _has_word_pair(code: str) -> bool:
    return any(m.group(1) not in _KEYWORDS and m.group(2) not in _KEYWORDS for m in _WORD_PAIR.finditer(code))


def _is_help_request(code_lines: list[str], is_defined: Callable[[str], bool]) -> bool:
    match = _HELP_LINE.match(code_lines[-1])
    if not match:
        return False
    root = re.split(r"[.*]", match.group(1), maxsplit=1)[0]
    if not root:  # a wildcard search such as ``*roast*?``
        return True
    return len(code_lines) > 1 or is_defined(root)


def _parse(text: str, transform: Callable[[str], str] | None) -> ast.Module | None:
    try:
        return ast.parse(transform(text) if transform is not None else text)
    except Exception:  # a SyntaxError, or IPython's transformers failing on odd input: not code
        return None


def _only_undefined_names(tree: ast.Module, is_defined: Callable[[str], bool]) -> bool:
    """True for a lone expression (or ``label: words`` annotation) made of undefined names only."""
    if len(tree.body) != 1:
        return False
    statement = tree.body[0]
    if isinstance(statement, ast.Expr):
        parts = [statement.value]
    elif isinstance(statement, ast.AnnAssign) and statement.value is None:
        parts = [statement.target, statement.annotation]
    else:
        return False
    nodes = [node for part in parts for node in ast.walk(part)]
    if not all(isinstance(node, _PROSE_NODES) for node in nodes):
        return False
    names = [node.id for node in nodes if isinstance(node, ast.Name)]
    return bool(names) and not any(is_defined(name) for name in names)
