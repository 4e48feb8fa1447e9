"""``engine.build`` repair: real ``verify`` reports of small planted faults, classified (class, owner, local
repair or contract escalation), their signatures, and the ledger that caps a run's repairs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from engine.build import (
    ERROR_CLASSES,
    MAX_ESCALATIONS,
    MAX_LOCAL_REPAIRS,
    Failure,
    RepairLedger,
    failures_of,
    signature,
)
from engine.output import Manifest, ManifestFile
from engine.verify import CHECKS, verify

CONTRACTS = (
    '"""The contracts."""\n\n\nclass User:\n    """A user."""\n\n    def __init__(self, name: str) -> None:\n'
    "        self.name = name\n\n\n"
    'def make_user(name: str) -> User:\n    """A user called name."""\n    return User(name)\n'
)

BASE: dict[str, str] = {
    "pkg/__init__.py": '"""The package."""\n',
    "pkg/contracts.py": CONTRACTS,
    "pkg/helpers.py": '"""Helpers."""\n\n\ndef shout(text: str) -> str:\n    return text.upper()\n',
}
OWNERS: dict[str, str] = {
    "pkg/__init__.py": "contracts",
    "pkg/contracts.py": "contracts",
    "pkg/helpers.py": "impl-helpers",
    "pkg/service.py": "impl-service",
    "pkg/broken.py": "impl-broken",
}


def manifest(files: Mapping[str, str], owners: Mapping[str, str] = OWNERS) -> Manifest:
    return Manifest(
        files=[
            ManifestFile.make(p, c, source_nodes=[owners[p]] if p in owners else []) for p, c in files.items()
        ]
    )


def report_of(files: Mapping[str, str], level: str = "basic", **options: Any) -> dict[str, Any]:
    return verify(manifest({**BASE, **files}), level, **options).to_dict()


def test_error_classes_cover_every_check() -> None:
    assert set(ERROR_CLASSES) == set(CHECKS)
    assert set(ERROR_CLASSES.values()) == {"syntax", "import", "type", "test", "lint", "integrity"}


def test_a_clean_report_has_no_failures() -> None:
    report = report_of({"pkg/service.py": "from pkg.contracts import User, make_user\n"})
    assert report["ok"]
    assert failures_of(report, OWNERS, ["pkg/contracts.py"]) == []


def test_a_syntax_error_is_repaired_locally_by_the_node_that_wrote_it() -> None:
    report = report_of({"pkg/broken.py": '"""Broken."""\n\ndef f(:\n    pass\n'})
    assert not report["ok"]
    failures = failures_of(report, OWNERS, ["pkg/contracts.py"])
    assert [(f.error_class, f.path, f.line, f.owner, f.scope) for f in failures] == [
        ("syntax", "pkg/broken.py", 3, "impl-broken", "local")
    ]
    assert "SyntaxError" in failures[0].message
    assert failures[0].to_dict() == {
        "error_class": "syntax",
        "path": "pkg/broken.py",
        "line": 3,
        "message": failures[0].message,
        "owner": "impl-broken",
        "scope": "local",
    }


def test_a_syntax_error_in_a_contract_file_is_still_local() -> None:
    report = report_of({"pkg/contracts.py": "class User(:\n    pass\n"})
    failures = failures_of(report, OWNERS, ["pkg/contracts.py"])
    assert [(f.error_class, f.path, f.owner, f.scope) for f in failures if f.error_class == "syntax"] == [
        ("syntax", "pkg/contracts.py", "contracts", "local")
    ]


SERVICE = (
    '"""The service."""\n\n'
    "from pkg.contracts import User, make_email\n"  # line 3: make_email is not in the contracts
    "from pkg.helpers import shout, whisper\n"  # line 4: whisper is not in the helpers
    "import notamodule_xyz\n"  # line 5: no such module anywhere
)


def test_a_symbol_missing_from_a_contract_module_escalates() -> None:
    report = report_of({"pkg/service.py": SERVICE})
    failures = failures_of(report, OWNERS, ["pkg/__init__.py", "pkg/contracts.py"])
    assert {f.error_class for f in failures} == {"import"}
    assert {f.owner for f in failures} == {"impl-service"}
    assert [(f.line, f.scope) for f in sorted(failures, key=lambda f: f.line)] == [
        (3, "escalate"),  # only the contracts can provide make_email
        (4, "local"),  # the helpers are not contracts: the implementation is wrong
        (5, "local"),  # an unknown module is never a contract mismatch
    ]
    escalated = next(f for f in failures if f.scope == "escalate")
    assert escalated.message.startswith("cannot import make_email from pkg.contracts")


def test_the_same_missing_symbol_is_local_when_its_module_is_not_a_contract() -> None:
    report = report_of({"pkg/service.py": SERVICE})
    for contracts in ([], ["pkg/helpers.py"], ["pkg/__init__.py"]):
        by_line = {f.line: f.scope for f in failures_of(report, OWNERS, contracts)}
        assert by_line[3] == "local", contracts
    by_line = {f.line: f.scope for f in failures_of(report, OWNERS, ["pkg/helpers.py"])}
    assert by_line[4] == "escalate"  # now the helpers are the contracts


def test_a_relative_import_of_a_missing_contract_symbol_escalates() -> None:
    report = report_of({"pkg/service.py": '"""S."""\n\nfrom .contracts import Missing\n'})
    failures = failures_of(report, OWNERS, ["pkg/contracts.py"])
    assert [(f.error_class, f.line, f.scope) for f in failures] == [("import", 3, "escalate")]


def test_a_missing_symbol_of_a_contract_package_init_escalates() -> None:
    report = report_of({"pkg/service.py": '"""S."""\n\nfrom pkg import Missing\n'})
    assert [f.scope for f in failures_of(report, OWNERS, ["pkg/__init__.py"])] == ["escalate"]
    assert [f.scope for f in failures_of(report, OWNERS, ["pkg/contracts.py"])] == ["local"]


def test_a_missing_contract_symbol_escalates_in_a_src_layout() -> None:
    files = {
        "src/shop/__init__.py": "",
        "src/shop/contracts.py": "class User:\n    pass\n",
        "src/shop/service.py": "from shop.contracts import Missing\n",
    }
    report = verify(manifest(files, dict.fromkeys(files, "n")), "basic").to_dict()
    assert report["missing_symbols"][0]["module"] == "shop.contracts"
    failures = failures_of(report, dict.fromkeys(files, "n"), ["src/shop/contracts.py"])
    assert [f.scope for f in failures] == ["escalate"]


def test_a_missing_contract_symbol_escalates_in_typescript() -> None:
    files = {
        "src/contracts.ts": "export interface User {\n  name: string;\n}\n",
        "src/service.ts": "import { Missing } from './contracts';\n",
    }
    report = verify(manifest(files, dict.fromkeys(files, "n")), "basic").to_dict()
    assert [m["symbol"] for m in report["missing_symbols"]] == ["Missing"]
    failures = failures_of(report, dict.fromkeys(files, "n"), ["src/contracts.ts"], checks=["imports"])
    assert [f.scope for f in failures] == ["escalate"]


def test_a_module_whose_name_extends_a_contract_modules_name_is_not_a_contract() -> None:
    files = {
        **BASE,
        "pkg/contracts_extra.py": "X = 1\n",
        "pkg/service.py": "from pkg.contracts import Gone\nfrom pkg.contracts_extra import Gone as G\n",
    }
    owners = dict.fromkeys(files, "n")
    report = verify(manifest(files, owners), "basic").to_dict()
    by_line = {f.line: f.scope for f in failures_of(report, owners, ["pkg/contracts.py"])}
    assert by_line == {1: "escalate", 2: "local"}


def test_a_type_error_escalates_in_a_contract_file_and_is_local_in_an_implementation() -> None:
    files = {
        "pkg/contracts.py": '"""Contracts."""\n\nLIMIT: int = "three"\n',
        "pkg/helpers.py": '"""Helpers."""\n\n\ndef shout(text: str) -> str:\n    return len(text)\n',
    }
    report = report_of(files, "build")
    assert report["checks"]["types"]["status"] == "fail", report["checks"]["types"]
    failures = failures_of(report, OWNERS, ["pkg/contracts.py"])
    assert {(f.error_class, f.path, f.line, f.owner, f.scope) for f in failures} == {
        ("type", "pkg/contracts.py", 3, "contracts", "escalate"),
        ("type", "pkg/helpers.py", 5, "impl-helpers", "local"),
    }
    # the same report, with no contract files: everything is local
    assert {f.scope for f in failures_of(report, OWNERS, [])} == {"local"}


def test_checks_restricts_which_failed_checks_are_read() -> None:
    report = report_of(
        {"pkg/broken.py": "def f(:\n    pass\n", "pkg/service.py": "from pkg.contracts import Nope\n"}
    )
    everything = failures_of(report, OWNERS, ["pkg/contracts.py"])
    assert {f.error_class for f in everything} == {"syntax", "import"}
    assert {f.error_class for f in failures_of(report, OWNERS, [], checks=["syntax"])} == {"syntax"}
    assert {f.error_class for f in failures_of(report, OWNERS, [], checks=["imports"])} == {"import"}
    assert failures_of(report, OWNERS, [], checks=["integrity"]) == []  # it passed
    assert failures_of(report, OWNERS, [], checks=["types"]) == []  # it did not run
    assert failures_of(report, OWNERS, [], checks=[]) == []


def test_by_default_only_blocking_checks_count_and_checks_can_ask_for_advisory_ones() -> None:
    files = {
        "pkg/service.py": '"""S."""\n\nimport os\n',  # F401: lint only
        "tests/test_service.py": 'def test_it() -> None:\n    assert len("a") == 2\n',
    }
    owners = {**OWNERS, "tests/test_service.py": "impl-tests"}
    report = verify(manifest({**BASE, **files}, owners), "strict", warn_only=["lint"]).to_dict()
    assert report["checks"]["lint"]["status"] == "fail" and "lint" not in report["blocking"]
    default = failures_of(report, owners, [])
    assert [(f.error_class, f.path, f.owner, f.scope) for f in default] == [
        ("test", "tests/test_service.py", "impl-tests", "local")
    ]
    lint = failures_of(report, owners, [], checks=["lint"])
    assert [(f.error_class, f.path, f.line, f.owner, f.scope) for f in lint] == [
        ("lint", "pkg/service.py", 3, "impl-service", "local")
    ]
    assert "F401" in lint[0].message


def test_an_integrity_failure_is_local_and_a_file_nobody_wrote_has_no_owner() -> None:
    report = report_of({"../escape.py": "x = 1\n", "pkg/stray.py": "def f(:\n"})
    failures = failures_of(report, {**OWNERS, "../escape.py": "impl-evil"}, ["pkg/contracts.py"])
    by_path = {f.path: f for f in failures}
    assert (by_path["../escape.py"].error_class, by_path["../escape.py"].owner) == ("integrity", "impl-evil")
    assert (by_path["pkg/stray.py"].error_class, by_path["pkg/stray.py"].owner) == ("syntax", "")
    assert {f.scope for f in failures} == {"local"}


def test_failures_of_reads_the_plain_dict_shape() -> None:
    report = {
        "blocking": ["syntax", "custom"],
        "checks": {
            "syntax": {"status": "fail", "findings": [{"path": "a.py", "line": None, "message": "bad"}]},
            "custom": {"status": "fail", "findings": [{"path": "b.py", "line": 7, "message": "odd"}]},
            "imports": {"status": "fail", "findings": [{"path": "c.py", "line": 1, "message": "x"}]},
        },
    }
    failures = failures_of(report, {"a.py": "n1"}, [])
    assert [(f.error_class, f.path, f.line, f.owner) for f in failures] == [
        ("syntax", "a.py", 0, "n1"),  # no line -> 0
        ("custom", "b.py", 7, ""),  # an unknown check keeps its name as the class
    ]
    assert failures_of({}, {}, []) == []


# --- signatures


def failure(message: str, path: str = "pkg/a.py", error_class: str = "type", line: int = 1) -> Failure:
    return Failure(error_class, path, line, message, "n", "local")


def test_a_signature_is_twelve_hex_digits_and_ignores_order_duplicates_owner_and_scope() -> None:
    a, b = failure("Incompatible types"), failure("Name is not defined", path="pkg/b.py")
    sig = signature([a, b])
    assert re.fullmatch(r"[0-9a-f]{12}", sig)
    assert signature([b, a]) == sig
    assert signature([a, b, a]) == sig
    moved = Failure(a.error_class, a.path, 99, a.message, "other-node", "escalate")
    assert signature([moved, b]) == sig
    assert signature([]) == signature([])
    assert signature([]) != sig


def test_a_signature_ignores_numbers_addresses_and_temporary_paths() -> None:
    one = failure("column 7: object at 0x7f3a2b10 /tmp/shad-abc123/pkg/a.py:12 took 1.25 s")
    two = failure("column 19: object at 0xdeadbeef /tmp/other_dir/x/pkg/a.py:3 took 30 s")
    assert signature([one]) == signature([two])


@pytest.mark.parametrize(
    "other",
    [
        failure("Incompatible types in assignment", path="pkg/b.py"),  # another file
        failure("Incompatible types in assignment", error_class="lint"),  # another class
        failure("Name 'x' is not defined"),  # another message
    ],
)
def test_different_failures_have_different_signatures(other: Failure) -> None:
    base = failure("Incompatible types in assignment")
    assert signature([base]) != signature([other])
    assert signature([base]) != signature([base, other])


def test_names_that_differ_only_in_a_digit_are_different_failures() -> None:
    one = failure("cannot import handler1 from pkg.api: not defined", error_class="import")
    two = failure("cannot import handler2 from pkg.api: not defined", error_class="import")
    assert signature([one]) != signature([two])


def test_a_real_failure_keeps_its_signature_when_it_moves_and_changes_when_it_changes() -> None:
    def sig(service: str, level: str = "basic") -> str:
        return signature(failures_of(report_of({"pkg/service.py": service}, level), OWNERS, []))

    base = sig('"""S."""\n\nfrom pkg.contracts import Nope\n')
    moved = sig('"""S."""\n\nimport os\n\n\n\nfrom pkg.contracts import Nope\n\nX = os.sep\n')
    assert moved == base
    assert sig('"""S."""\n\nfrom pkg.contracts import Other\n') != base
    assert sig('"""S."""\n\nfrom pkg.helpers import Nope\n') != base

    typed = sig('"""S."""\n\nX: int = "s"\n', "build")
    typed_moved = sig('"""S."""\n\n\n\n\nY = 1\nX:    int = "s"\n', "build")  # other line and column
    assert typed_moved == typed != base
    assert sig('"""S."""\n\nX: str = 1\n', "build") != typed


# --- the ledger


def test_the_default_caps_are_the_seeds() -> None:
    ledger = RepairLedger()
    assert (ledger.max_local, ledger.max_escalations) == (MAX_LOCAL_REPAIRS, MAX_ESCALATIONS) == (2, 10)


def test_local_repairs_are_capped_per_node() -> None:
    ledger = RepairLedger(max_local=2)
    assert ledger.may_repair("a") and ledger.may_repair("b")
    assert ledger.record("a", "local", {"signature": "s1"}) == 1
    assert ledger.may_repair("a")
    assert ledger.record("a", "local", {"signature": "s2"}) == 2
    assert not ledger.may_repair("a")
    assert ledger.may_repair("b")  # another node has its own budget
    assert ledger.record("b", "local", {}) == 1
    assert ledger.attempts == {"a": 2, "b": 1}
    assert ledger.escalations == 0 and ledger.may_escalate()
    assert not RepairLedger(max_local=0).may_repair("a")


def test_escalations_are_capped_per_run_whatever_the_node() -> None:
    ledger = RepairLedger(max_escalations=3)
    assert [ledger.record(node, "escalate", {}) for node in ("a", "b", "a")] == [1, 2, 3]
    assert not ledger.may_escalate()
    assert ledger.escalations == 3
    assert ledger.attempts == {}  # escalations do not spend a node's local repairs
    assert ledger.may_repair("a")


def test_repeated_records_a_signature_per_node_and_says_when_it_was_seen() -> None:
    ledger = RepairLedger()
    assert not ledger.repeated("a", "sig1")
    assert ledger.repeated("a", "sig1")
    assert ledger.repeated("a", "sig1")
    assert not ledger.repeated("a", "sig2")
    assert not ledger.repeated("b", "sig1")  # another node's failures are its own
    assert ledger.seen == {"a": {"sig1", "sig2"}, "b": {"sig1"}}
    assert ledger.attempts == {} and ledger.log == []  # seeing is not spending


def test_the_log_keeps_every_attempt_in_order_with_its_entry() -> None:
    ledger = RepairLedger()
    ledger.record("a", "local", {"signature": "s1", "failures": 2})
    ledger.record("b", "escalate", {"signature": "s2"})
    ledger.record("a", "local", {"signature": "s3"})
    assert ledger.log == [
        {"node": "a", "scope": "local", "attempt": 1, "signature": "s1", "failures": 2},
        {"node": "b", "scope": "escalate", "attempt": 1, "signature": "s2"},
        {"node": "a", "scope": "local", "attempt": 2, "signature": "s3"},
    ]


def test_a_repair_loop_on_a_real_report_stops_on_a_repeat() -> None:
    """The way a run uses the pieces: the same failures twice end the node's repairs before its cap."""
    ledger = RepairLedger(max_local=5)
    broken = {"pkg/broken.py": '"""B."""\n\ndef f(:\n    pass\n'}
    attempts = 0
    for _ in range(5):
        failures = failures_of(report_of(broken), OWNERS, ["pkg/contracts.py"])
        node = failures[0].owner
        if ledger.repeated(node, signature(failures)) or not ledger.may_repair(node):
            break
        attempts = ledger.record(node, "local", {"signature": signature(failures)})
        broken = {"pkg/broken.py": '"""B."""\n\n\n\ndef f(:\n    pass\n'}  # a "repair" that moved the fault
    assert attempts == 1
    assert ledger.attempts == {"impl-broken": 1}
