"""``engine.build`` stubs: spec-first contract tests and a test plan from the contracts' public names, and
proof that the generated tests pass next to the contracts and fail once a contract goes missing."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from engine.build import STUB_PLAN, STUB_TESTS, Workspace, contract_stubs
from engine.output import ManifestFile
from engine.verify import verify

CONTRACTS = (
    '"""The contracts."""\n\n'
    "from __future__ import annotations\n\n"
    "from dataclasses import dataclass\n\n"
    "LIMIT = 3\n"
    "_SECRET = 1\n\n\n"
    "@dataclass\n"
    "class User:\n"
    '    """A user."""\n\n'
    "    name: str\n\n\n"
    "def make_user(name: str) -> User:\n"
    '    """A user called name."""\n'
    "    return User(name)\n\n\n"
    "class _Hidden:\n"
    '    """Private."""\n\n\n'
    "def _helper() -> None:\n"
    '    """Private."""\n'
)
ERRORS = '"""Errors."""\n\n\nclass NotFoundError(Exception):\n    """Nothing there."""\n'
IMPL = '"""Not a contract."""\n\n\ndef implementation_detail() -> int:\n    """One."""\n    return 1\n'


def workspace(contracts: dict[str, str], others: dict[str, str] | None = None) -> Workspace:
    ws = Workspace(dependencies=["pytest"])
    ws.add([ManifestFile.make(p, c, source_nodes=["contracts"]) for p, c in contracts.items()], contract=True)
    ws.add([ManifestFile.make(p, c, source_nodes=["impl"]) for p, c in (others or {}).items()])
    return ws


def stubs_of(ws: Workspace, node: str = "stubs") -> dict[str, ManifestFile]:
    return {f.path: f for f in contract_stubs(ws.export_index(), ws.contract_files, node)}


def rows(tests: str) -> list[tuple[str, str, str]]:
    """The CONTRACTS list of a generated test file, read as Python."""
    for node in ast.parse(tests).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["CONTRACTS"]:
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return [tuple(row) for row in value]
    raise AssertionError("no CONTRACTS in the generated tests")


PACKAGE = {"pkg/__init__.py": '"""The package."""\n', "pkg/contracts.py": CONTRACTS, "pkg/errors.py": ERRORS}


def test_stubs_list_the_public_names_of_the_contract_modules() -> None:
    stubs = stubs_of(workspace(PACKAGE, {"pkg/impl.py": IMPL}), node="tdd-1")
    assert list(stubs) == [STUB_PLAN, STUB_TESTS] == ["TEST_PLAN.md", "tests/test_contracts.py"]
    assert {f.source_nodes for f in stubs.values()} == {("tdd-1",)}
    assert stubs[STUB_TESTS].language == "python" and stubs[STUB_PLAN].language == "markdown"
    assert rows(stubs[STUB_TESTS].content) == [
        ("pkg.contracts", "LIMIT", "variable"),
        ("pkg.contracts", "User", "class"),
        ("pkg.contracts", "make_user", "function"),
        ("pkg.errors", "NotFoundError", "class"),
    ]


def test_private_names_imports_and_other_modules_are_left_out() -> None:
    stubs = stubs_of(workspace(PACKAGE, {"pkg/impl.py": IMPL}))
    text = stubs[STUB_TESTS].content + stubs[STUB_PLAN].content
    for absent in ("_SECRET", "_Hidden", "_helper", "dataclass", "annotations", "implementation_detail"):
        assert absent not in text, absent
    assert "pkg.impl" not in text


def test_a_private_name_or_a_submodule_stays_out_even_when_all_lists_it() -> None:
    contracts = (
        '"""C."""\n\n__all__ = ["User", "_internal", "helpers"]\n\n\n'
        "class User:\n    pass\n\n\ndef _internal() -> None:\n    pass\n"
    )
    ws = workspace({"pkg/__init__.py": "", "pkg/contracts.py": contracts, "pkg/contracts/helpers.py": ""})
    assert "_internal" in {e["symbol"] for e in ws.export_index().exports}  # the index lists it
    assert rows(stubs_of(ws)[STUB_TESTS].content) == [("pkg.contracts", "User", "class")]


def test_the_plan_is_a_table_of_every_contract_with_what_to_test() -> None:
    plan = stubs_of(workspace(PACKAGE))[STUB_PLAN].content
    assert plan.startswith("# Test plan\n") and plan.endswith("\n") and not plan.endswith("\n\n")
    table = [line for line in plan.splitlines() if line.startswith("| `")]
    assert table == [
        "| `pkg.contracts` | `LIMIT` | variable | its value |",
        "| `pkg.contracts` | `User` | class | behaviour on typical, edge and invalid inputs |",
        "| `pkg.contracts` | `make_user` | function | behaviour on typical, edge and invalid inputs |",
        "| `pkg.errors` | `NotFoundError` | class | behaviour on typical, edge and invalid inputs |",
    ]


def test_a_package_init_that_reexports_is_pinned_under_the_package_name() -> None:
    init = '"""P."""\n\nfrom pkg.contracts import User, make_user\n\n__all__ = ["User", "make_user"]\n'
    stubs = stubs_of(workspace({"pkg/__init__.py": init, "pkg/contracts.py": CONTRACTS}))
    assert ("pkg", "User", "class") in rows(stubs[STUB_TESTS].content)
    assert ("pkg", "make_user", "function") in rows(stubs[STUB_TESTS].content)


def test_a_src_layout_uses_the_importable_module_name() -> None:
    ws = workspace({"src/shop/__init__.py": "", "src/shop/contracts.py": CONTRACTS})
    assert {m for m, _, _ in rows(stubs_of(ws)[STUB_TESTS].content)} == {"shop.contracts"}


@pytest.mark.parametrize(
    "contracts",
    [
        {},
        {"src/contracts.ts": "export interface User {\n  name: string;\n}\nexport function f(): void {}\n"},
        {
            "pkg/__init__.py": "",
            "pkg/contracts.py": '"""Only private."""\n\n_X = 1\n\n\ndef _f() -> None: ...\n',
        },
        {"pkg/contracts.py": "def broken(:\n"},  # does not parse: exports nothing
        {"README.md": "# Contracts\n", "schema.json": "{}\n"},
    ],
)
def test_no_python_contracts_no_stubs(contracts: dict[str, str]) -> None:
    ws = workspace(contracts, {"pkg/impl.py": IMPL})
    assert contract_stubs(ws.export_index(), ws.contract_files, "s") == []


def test_without_contract_files_nothing_is_pinned_even_with_public_names() -> None:
    ws = workspace({}, {"pkg/__init__.py": "", "pkg/impl.py": IMPL})
    index = ws.export_index()  # no contracts: every file's exports
    assert any(e["symbol"] == "implementation_detail" for e in index.exports)
    assert contract_stubs(index, ws.contract_files, "s") == []
    assert [m for m, _, _ in rows(contract_stubs(index, {"pkg/impl.py"}, "s")[1].content)] == ["pkg.impl"]


def write(root: Path, files: Iterable[ManifestFile]) -> None:
    for f in files:
        target = root / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.content, encoding="utf-8")


def pytest_in(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", STUB_TESTS],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_generated_tests_pass_next_to_the_contracts_and_fail_when_one_goes(tmp_path: Path) -> None:
    ws = workspace(PACKAGE, {"pkg/impl.py": IMPL})
    ws.add(stubs_of(ws).values())
    write(tmp_path, ws.files.values())
    run = pytest_in(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout and "failed" not in run.stdout, run.stdout

    # make_user goes missing from the contracts: the stubs fail and name it
    (tmp_path / "pkg" / "contracts.py").write_text(
        CONTRACTS.replace("def make_user(", "def make_person("), encoding="utf-8"
    )
    run = pytest_in(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "failed" in run.stdout and "make_user" in run.stdout, run.stdout
    # and pass again once it is back
    (tmp_path / "pkg" / "contracts.py").write_text(CONTRACTS, encoding="utf-8")
    assert pytest_in(tmp_path).returncode == 0


def test_the_generated_tests_fail_when_a_class_becomes_a_constant(tmp_path: Path) -> None:
    ws = workspace(PACKAGE)
    ws.add(stubs_of(ws).values())
    write(tmp_path, ws.files.values())
    (tmp_path / "pkg" / "errors.py").write_text('"""Errors."""\n\nNotFoundError = "nope"\n', encoding="utf-8")
    run = pytest_in(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pkg.errors.NotFoundError should be a class" in run.stdout, run.stdout


def test_the_generated_files_pass_every_check_of_the_strict_level() -> None:
    ws = workspace(PACKAGE)
    ws.add(stubs_of(ws).values())
    report = verify(ws.manifest(), "strict")
    assert report.ok, report.to_dict()
    assert report.checks["tests"].status == "pass" and report.checks["lint"].status == "pass"


def test_contracts_in_a_folder_without_an_init_are_imported_from_the_root() -> None:
    ws = workspace({"pkg/contracts.py": CONTRACTS})
    ws.add(stubs_of(ws).values())
    report = verify(ws.manifest(), "strict")
    assert report.checks["tests"].status == "pass", report.to_dict()["checks"]["tests"]


def test_a_contract_constant_that_is_none_is_defined(tmp_path: Path) -> None:
    contracts = '"""C."""\n\nDEFAULT_NAME: str | None = None\n'
    ws = workspace({"pkg/__init__.py": "", "pkg/contracts.py": contracts})
    assert rows(stubs_of(ws)[STUB_TESTS].content) == [("pkg.contracts", "DEFAULT_NAME", "variable")]
    ws.add(stubs_of(ws).values())
    write(tmp_path, ws.files.values())
    run = pytest_in(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
