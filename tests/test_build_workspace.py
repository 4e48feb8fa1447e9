"""``engine.build`` workspace: the manifest a software run builds, who owns each file and what happened to
it (replaced, dropped), the contract files and their export index, change requests, and the JSON shape."""

from __future__ import annotations

import json

from engine.build import Workspace, file_blocks
from engine.output import Manifest, ManifestFile, ManifestNote, build_export_index

CONTRACTS = "class User:\n    name: str\n\n\ndef make_user(name: str) -> User: ...\n"
SERVICE = "from pkg.contracts import User\n\n\ndef greet(user: User) -> str:\n    return user.name\n"


def contracts_workspace() -> Workspace:
    ws = Workspace(run_id="run-1")
    reply = f'```python title="pkg/__init__.py"\n```\n\n```python title="pkg/contracts.py"\n{CONTRACTS}```\n'
    assert ws.add_blocks(file_blocks(reply), "contracts", ["[[Patterns/Contracts]]"], contract=True) == [
        "pkg/__init__.py",
        "pkg/contracts.py",
    ]
    return ws


def test_add_blocks_makes_files_owned_by_the_node_and_citing_the_notes() -> None:
    ws = contracts_workspace()
    f = ws.files["pkg/contracts.py"]
    assert (f.content, f.language, f.mode) == (CONTRACTS, "python", "create")
    assert f.hash == ManifestFile.make("x.py", CONTRACTS).hash
    assert (f.source_nodes, f.source_notes) == (("contracts",), ("[[Patterns/Contracts]]",))
    assert ws.contract_files == {"pkg/__init__.py", "pkg/contracts.py"}
    assert ws.notes == []
    added = ws.add_blocks(file_blocks(f'```python title="pkg/service.py"\n{SERVICE}```\n'), "impl")
    assert added == ["pkg/service.py"]
    assert ws.files["pkg/service.py"].source_notes == ()
    assert "pkg/service.py" not in ws.contract_files  # contract=False by default
    assert list(ws.files) == ["pkg/__init__.py", "pkg/contracts.py", "pkg/service.py"]  # first-seen order


def test_owners_and_files_of() -> None:
    ws = contracts_workspace()
    ws.add([ManifestFile.make("pkg/service.py", SERVICE, source_nodes=["impl"])])
    ws.add([ManifestFile.make("README.md", "# x\n")])  # nobody's
    assert ws.owner("pkg/contracts.py") == "contracts"
    assert ws.owner("README.md") == ""
    assert ws.owner("nope.py") == ""
    assert ws.owners() == {
        "pkg/__init__.py": "contracts",
        "pkg/contracts.py": "contracts",
        "pkg/service.py": "impl",
        "README.md": "",
    }
    assert ws.files_of("contracts") == ["pkg/__init__.py", "pkg/contracts.py"]
    assert ws.files_of("impl") == ["pkg/service.py"]
    assert ws.files_of("nobody") == []


def test_a_node_replacing_its_own_file_leaves_no_note() -> None:
    ws = Workspace()
    ws.add([ManifestFile.make("a.py", "x = 1\n", source_nodes=["n1"], source_notes=["[[A]]"])])
    ws.add([ManifestFile.make("a.py", "x = 2\n", source_nodes=["n1"], source_notes=["[[B]]"])])
    f = ws.files["a.py"]
    assert f.content == "x = 2\n" and f.hash == ManifestFile.make("a.py", "x = 2\n").hash
    assert f.source_nodes == ("n1",)
    assert f.source_notes == ("[[B]]", "[[A]]")  # newest first, each once
    assert ws.notes == []
    assert list(ws.files) == ["a.py"]


def test_another_node_replacing_a_file_keeps_the_history_and_says_so() -> None:
    ws = contracts_workspace()
    ws.add([ManifestFile.make("pkg/service.py", SERVICE, source_nodes=["impl-1"], source_notes=["[[S]]"])])
    new = SERVICE + "\n\ndef bye() -> str:\n    return 'bye'\n"
    assert ws.add([ManifestFile.make("pkg/service.py", new, source_nodes=["repair-1"])]) == ["pkg/service.py"]
    f = ws.files["pkg/service.py"]
    assert f.content == new and f.hash == ManifestFile.make("pkg/service.py", new).hash
    assert f.source_nodes == ("repair-1", "impl-1")  # the newest owner first
    assert f.source_notes == ("[[S]]",)
    assert ws.owner("pkg/service.py") == "repair-1"
    assert ws.files_of("impl-1") == [] and ws.files_of("repair-1") == ["pkg/service.py"]
    assert ws.notes == [ManifestNote("replaced", "pkg/service.py from impl-1 was replaced", "repair-1")]
    # the first owner writing it back is a replacement too, and the history stays one entry per node
    ws.add([ManifestFile.make("pkg/service.py", SERVICE, source_nodes=["impl-1"])])
    assert ws.files["pkg/service.py"].source_nodes == ("impl-1", "repair-1")
    assert [n.detail for n in ws.notes] == [
        "pkg/service.py from impl-1 was replaced",
        "pkg/service.py from repair-1, impl-1 was replaced",
    ]
    assert [n.node for n in ws.notes] == ["repair-1", "impl-1"]


def test_replacing_keeps_the_new_files_mode() -> None:
    ws = Workspace()
    ws.add([ManifestFile.make("a.py", "x = 1\n", source_nodes=["a"])])
    ws.add([ManifestFile.make("a.py", "x = 2\n", mode="overwrite", source_nodes=["b"])])
    assert ws.files["a.py"].mode == "overwrite"


def test_the_contract_flag_marks_files_and_a_later_write_keeps_them_contracts() -> None:
    ws = contracts_workspace()
    ws.add([ManifestFile.make("pkg/contracts.py", CONTRACTS + "X = 1\n", source_nodes=["reconcile"])])
    assert "pkg/contracts.py" in ws.contract_files
    ws.add([ManifestFile.make("pkg/types.py", "T = int\n", source_nodes=["reconcile"])], contract=True)
    assert ws.contract_files == {"pkg/__init__.py", "pkg/contracts.py", "pkg/types.py"}
    assert [f.path for f in ws.contracts().files] == ["pkg/__init__.py", "pkg/contracts.py", "pkg/types.py"]
    assert ws.contracts().notes == [] and ws.contracts().run_id == ""


def test_drop_removes_the_file_and_its_contract_membership_with_a_note() -> None:
    ws = contracts_workspace()
    ws.add([ManifestFile.make("../escape.py", "x = 1\n", source_nodes=["impl"])])
    assert ws.drop("../escape.py", "the path climbs out of the output folder")
    assert "../escape.py" not in ws.files
    assert ws.notes == [
        ManifestNote("dropped", "../escape.py: the path climbs out of the output folder", "impl")
    ]
    assert ws.drop("pkg/contracts.py", "unsafe")
    assert ws.contract_files == {"pkg/__init__.py"}
    assert [f.path for f in ws.contracts().files] == ["pkg/__init__.py"]
    assert ws.notes[-1] == ManifestNote("dropped", "pkg/contracts.py: unsafe", "contracts")
    # dropping what is not there says so and changes nothing
    before = list(ws.notes)
    assert not ws.drop("pkg/contracts.py", "again")
    assert not ws.drop("never.py", "x")
    assert ws.notes == before


def test_change_requests_are_notes_until_settled() -> None:
    ws = contracts_workspace()
    ws.add([ManifestFile.make("a.py", "x = 1\n", source_nodes=["a"])])
    ws.add([ManifestFile.make("a.py", "x = 2\n", source_nodes=["b"])])  # a "replaced" note
    assert ws.open_requests() == []
    ws.request_change("impl-1", "User needs an email field")
    ws.request_change("impl-2", "add make_admin()")
    assert ws.open_requests() == [
        ManifestNote("contract_change_request", "User needs an email field", "impl-1"),
        ManifestNote("contract_change_request", "add make_admin()", "impl-2"),
    ]
    ws.settle_requests("contracts regenerated")
    assert ws.open_requests() == []
    assert [(n.kind, n.detail, n.node) for n in ws.notes] == [
        ("replaced", "a.py from a was replaced", "b"),  # other notes are untouched, in place
        ("contract_change_reconciled", "User needs an email field — contracts regenerated", "impl-1"),
        ("contract_change_reconciled", "add make_admin() — contracts regenerated", "impl-2"),
    ]
    ws.request_change("impl-3", "one more")
    assert [n.detail for n in ws.open_requests()] == ["one more"]
    ws.settle_requests("again")  # the reconciled ones are not settled twice
    assert [n.detail for n in ws.notes if n.kind == "contract_change_reconciled"] == [
        "User needs an email field — contracts regenerated",
        "add make_admin() — contracts regenerated",
        "one more — again",
    ]


def test_the_export_index_uses_the_contract_files_when_there_are_some() -> None:
    ws = contracts_workspace()
    ws.add([ManifestFile.make("pkg/service.py", SERVICE, source_nodes=["impl"])])
    index = ws.export_index()
    assert {e["from"] for e in index.exports} == {"pkg/contracts.py"}
    assert {e["symbol"] for e in index.exports} == {"User", "make_user"}
    assert "pkg.service" not in index.modules and index.modules["pkg.contracts"] == "pkg/contracts.py"
    assert index.to_dict() == build_export_index(ws.contracts()).to_dict()


def test_the_export_index_uses_every_file_when_there_are_no_contracts() -> None:
    ws = Workspace()
    ws.add(
        [
            ManifestFile.make("pkg/__init__.py", "", source_nodes=["a"]),
            ManifestFile.make("pkg/contracts.py", CONTRACTS, source_nodes=["a"]),
            ManifestFile.make("pkg/service.py", SERVICE, source_nodes=["b"]),
        ]
    )
    index = ws.export_index()
    assert {e["symbol"] for e in index.exports} >= {"User", "make_user", "greet"}
    assert index.modules["pkg.service"] == "pkg/service.py"
    # and once the only contract is dropped, every file counts again
    ws2 = contracts_workspace()
    ws2.add([ManifestFile.make("pkg/service.py", SERVICE, source_nodes=["impl"])])
    ws2.drop("pkg/contracts.py", "x")
    ws2.drop("pkg/__init__.py", "x")
    assert {e["symbol"] for e in ws2.export_index().exports} == {"greet"}


def test_manifest_carries_files_notes_run_id_and_dependencies() -> None:
    ws = contracts_workspace()
    ws.dependencies.append("pytest")
    ws.request_change("impl", "more")
    m = ws.manifest()
    assert isinstance(m, Manifest)
    assert [f.path for f in m.files] == ["pkg/__init__.py", "pkg/contracts.py"]
    assert (m.run_id, m.dependencies, m.notes) == ("run-1", ["pytest"], ws.notes)
    m.dependencies.append("x")  # a copy: the workspace is not changed through it
    m.notes.clear()
    assert ws.dependencies == ["pytest"] and len(ws.notes) == 1


def test_to_dict_and_from_dict_round_trip_through_json() -> None:
    ws = contracts_workspace()
    ws.model_written = False
    ws.dependencies.append("pytest")
    ws.add([ManifestFile.make("bin/tool", "print(1)\n", language="python", source_nodes=["impl"])])
    ws.add(
        [ManifestFile.make("pkg/contracts.py", CONTRACTS + "Y = 2\n", mode="overwrite", source_nodes=["r"])]
    )
    ws.request_change("impl", "add Y")
    data = json.loads(json.dumps(ws.to_dict()))
    assert data["contract_files"] == ["pkg/__init__.py", "pkg/contracts.py"]  # sorted
    assert data["model_written"] is False
    back = Workspace.from_dict(data)
    assert back == ws
    assert list(back.files) == list(ws.files)
    assert back.files["bin/tool"].language == "python"
    assert back.files["pkg/contracts.py"].source_nodes == ("r", "contracts")
    assert back.to_dict() == ws.to_dict()


def test_from_dict_of_an_empty_or_older_shape() -> None:
    assert Workspace.from_dict({}) == Workspace()
    old = {"manifest": Workspace(run_id="r").manifest().to_dict()}  # no contract_files, no model_written
    back = Workspace.from_dict(old)
    assert (back.run_id, back.contract_files, back.model_written) == ("r", set(), True)


def test_a_replaced_file_keeps_an_explicit_language() -> None:
    ws = Workspace()
    ws.add([ManifestFile.make("bin/tool", "print(1)\n", language="python", source_nodes=["a"])])
    ws.add([ManifestFile.make("bin/tool", "print(2)\n", language="python", source_nodes=["a"])])
    assert ws.files["bin/tool"].language == "python"
