"""``shad sandbox run``: the JSON it prints and its exit codes (0 ok, 3 blocked, 4 limited, 1 error)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

try:
    from tests._codemode_fixtures import DEMO_VAULT, codemode_env, codemode_home
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from _codemode_fixtures import DEMO_VAULT, codemode_env, codemode_home  # type: ignore[no-redef]

__all__ = ["codemode_env", "codemode_home"]  # fixtures used by name


def shad(capsys: pytest.CaptureFixture[str], tmp_path: Path, script: str, *args: str) -> tuple[int, Any, str]:
    path = tmp_path / "script.py"
    path.write_text(script, encoding="utf-8")
    code = main(["sandbox", "run", str(path), "--vault", str(DEMO_VAULT), *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_success_prints_result_stdout_and_stats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    script = (
        "hits = obsidian.search('grind size', limit=3)\n"
        'print(\'{"result": "forged"}\')\n'
        "__result__ = {'paths': [h['path'] for h in hits]}\n"
    )
    code, data, _ = shad(capsys, tmp_path, script)
    assert code == 0
    assert set(data) == {"result", "stdout", "stats"}
    assert data["result"]["paths"] and all(p.endswith(".md") for p in data["result"]["paths"])
    assert data["stdout"] == '{"result": "forged"}\n'  # printed text stays text
    assert data["stats"]["isolation"] in ("bubblewrap", "subprocess")
    assert data["stats"]["broker"]["calls"] == 1


@pytest.mark.parametrize(
    "script, code, kind, etype",
    [
        ("import os\n__result__ = os.listdir('/')", 3, "blocked", "PolicyViolation"),
        ("__result__ = obsidian.read_note('../../etc/passwd')", 3, "blocked", "PolicyViolation"),
        ("__result__ = 'x' * 300_000", 4, "limited", "ResultError"),
        ("d = {}\n__result__ = d['missing']", 1, "error", "KeyError"),
        ("def broken(:\n    pass", 1, "error", "SyntaxError"),
    ],
)
def test_refusals_print_one_error_object_and_exit_by_kind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, script: str, code: int, kind: str, etype: str
) -> None:
    exit_code, data, _ = shad(capsys, tmp_path, script)
    assert exit_code == code
    assert set(data) == {"error"}
    assert set(data["error"]) == {"kind", "type", "message"}
    assert data["error"]["kind"] == kind and data["error"]["type"] == etype and data["error"]["message"]


def test_timeout_is_limited(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHAD_SANDBOX_TIMEOUT", "1")
    code, data, _ = shad(capsys, tmp_path, "while True:\n    pass\n", "--isolation", "subprocess")
    assert code == 4 and data["error"]["type"] == "TimeLimit"


def test_layered_vaults_and_local_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make_vault: Any
) -> None:
    second = make_vault({"Only.md": "# Only\nonly in the second vault"}, "second")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("plain file", encoding="utf-8")
    script = (
        "__result__ = [obsidian.vaults(), obsidian.read_note('Only.md')['vault'], "
        "obsidian.read_file('notes.txt')]"
    )
    code, data, _ = shad(
        capsys, tmp_path, script, "--vault", str(second), "--profile", "local", "--fs-read", str(docs)
    )
    assert code == 0, data
    ids, owner, text = data["result"]
    assert len(ids) == 2 and owner == ids[1] and text == "plain file"


def test_usage_errors_are_one_line_without_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, data, err = shad(capsys, tmp_path, "__result__ = 1", "--fs-read", str(tmp_path))
    assert code == 2 and data is None and "--fs-read needs --profile local" in err
    assert "Traceback" not in err
    code = main(["sandbox", "run", str(tmp_path / "missing.py"), "--vault", str(DEMO_VAULT)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "cannot read the script" in err
    code = main(["sandbox", "run", str(tmp_path / "script.py"), "--vault", str(tmp_path / "no-such-vault")])
    out, err = capsys.readouterr()
    assert code == 2 and "vault folder not found" in err


def test_script_from_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fake_stdin = io.TextIOWrapper(io.BytesIO(b"__result__ = sorted({'b': 1, 'a': 2})\n"))
    monkeypatch.setattr(sys, "stdin", fake_stdin)
    code = main(["sandbox", "run", "-", "--vault", str(DEMO_VAULT)])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["result"] == ["a", "b"]
