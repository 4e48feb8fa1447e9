"""``shad verify`` on a generated 20-file Python package (15 modules, 5 test files), strict and basic.

    python benchmarks/bench_verify.py [--runs 5]

Prints one JSON object: for each level, the median (and min/max) wall time of ``verify_path`` over
``--runs`` runs and the median duration of each check (the tool checks run side by side, so the wall
time is about the slowest of them, not their sum) and the isolation used; and the wall time of the
command ``shad verify --level strict --json`` itself (a new interpreter each run).
Every run starts cold on purpose: each tool gets a fresh temporary copy and mypy a fresh cache.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.verify import verify_path  # noqa: E402

MODULE = '''"""Module {i}: small typed helpers that lean on the module before it."""

from __future__ import annotations

from dataclasses import dataclass
{import_line}

@dataclass
class Item{i}:
    name: str
    weight: float

    def scaled(self, factor: float) -> Item{i}:
        return Item{i}(self.name, self.weight * factor)


def total_{i}(items: list[Item{i}]) -> float:
    return sum(item.weight for item in items) + {base}


def names_{i}(items: list[Item{i}]) -> list[str]:
    return sorted(item.name for item in items)
'''

TEST = """from pkg.mod{a} import Item{a}, names_{a}, total_{a}
from pkg.mod{b} import Item{b}, total_{b}


def test_total_{a}() -> None:
    assert total_{a}([Item{a}("x", 1.0), Item{a}("y", 2.0)]) == 3.0 + {base_a}


def test_names_{a}() -> None:
    assert names_{a}([Item{a}("b", 1.0), Item{a}("a", 1.0)]) == ["a", "b"]


def test_scaled_{b}() -> None:
    assert total_{b}([Item{b}("x", 1.0).scaled(2.0)]) == 2.0 + {base_b}
"""


def make_package(root: Path, modules: int = 14, tests: int = 5) -> int:
    """Write the package; returns its number of Python files (20 with the defaults: ``__init__``,
    ``modules`` modules, each importing the one before, and ``tests`` test files), plus pyproject.toml."""
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "0.1"\n', encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text('"""A generated package."""\n', encoding="utf-8")
    for i in range(1, modules + 1):
        previous = f"\nfrom pkg.mod{i - 1} import total_{i - 1}\n\nPREVIOUS = total_{i - 1}\n"
        import_line = previous if i > 1 else ""
        text = MODULE.format(i=i, base=i, import_line=import_line)
        (root / "pkg" / f"mod{i}.py").write_text(text, encoding="utf-8")
    for t in range(tests):
        a, b = 1 + 2 * t, 2 + 2 * t
        text = TEST.format(a=a, b=b, base_a=a, base_b=b)
        (root / "tests" / f"test_mod{a}.py").write_text(text, encoding="utf-8")
    return 1 + modules + tests


def measure(root: Path, level: str, runs: int) -> dict[str, object]:
    walls: list[float] = []
    per_check: dict[str, list[float]] = {}
    statuses: dict[str, str] = {}
    isolation = ""
    for _ in range(runs):
        t0 = time.perf_counter()
        report = verify_path(root, level)
        walls.append(time.perf_counter() - t0)
        assert report.ok, report.to_dict()
        for name, result in report.checks.items():
            per_check.setdefault(name, []).append(result.duration_s)
            statuses[name] = result.status
        isolation = report.isolation
    return {
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "max_s": round(max(walls), 3),
        "runs": runs,
        "checks_median_s": {name: round(statistics.median(v), 3) for name, v in per_check.items()},
        "statuses": statuses,
        "isolation": isolation,
    }


def measure_cli(root: Path, runs: int) -> dict[str, object]:
    """``shad verify ROOT --level strict --json`` as a user runs it: a new interpreter each time."""
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "engine.cli", "verify", str(root), "--level", "strict", "--json"],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
        walls.append(time.perf_counter() - t0)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return {"median_s": round(statistics.median(walls), 3), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        root = Path(tmp) / "project"
        python_files = make_package(root)
        verify_path(root, "basic")  # warm: imports, the bubblewrap probe
        result = {
            "python_files": python_files,
            "strict": measure(root, "strict", args.runs),
            "basic": measure(root, "basic", args.runs),
            "cli_strict": measure_cli(root, args.runs),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
