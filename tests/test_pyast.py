"""``engine.pyast``: parsing Python from several threads at once (CPython gh-106905)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from engine import pyast

REPO = Path(__file__).resolve().parent.parent

# Three threads parse while a fourth makes garbage whose finalizers run Python code during collections,
# switching threads as often as possible. Run in a fresh interpreter: its heap is small (collections are
# cheap) and this process's switch interval and collector settings stay as they are.
STRESS = textwrap.dedent(
    """
    import gc, json, sys, threading
    from engine import pyast

    source = "\\n".join(
        f"def f{i}(x):\\n    return [(a, {{b: [c for c in range(b)]}}) for a in range(x) for b in (1, 2)]"
        for i in range(100)
    )
    errors, trees = [], []

    class Cycle:
        def __init__(self):
            self.me = self

        def __del__(self):
            sum(range(50))

    def parse():
        try:
            for _ in range(40):
                trees.append(len(pyast.parse(source).body))
        except Exception as e:
            errors.append(repr(e))

    def litter():
        for _ in range(200_000):
            Cycle()

    sys.setswitchinterval(1e-6)
    gc.set_threshold(50)
    threads = [threading.Thread(target=parse) for _ in range(3)] + [threading.Thread(target=litter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"errors": errors, "trees": trees}))
    """
)


def test_threads_parsing_during_garbage_collections_all_succeed() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STRESS], cwd=REPO, capture_output=True, text=True, timeout=300, check=True
    )
    result = json.loads(done.stdout)
    assert result["errors"] == []
    assert result["trees"] == [100] * 120


def test_literal_eval_and_exclusive() -> None:
    assert pyast.literal_eval("[1, 'a', None]") == [1, "a", None]
    with pyast.exclusive(), pyast.exclusive():  # re-entrant: a parse inside a held section is fine
        assert isinstance(pyast.parse("x = 1"), ast.Module)
