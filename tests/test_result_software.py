"""``ShadResult`` of a software run (shad_magics._result): the code manifest, the checks and the write
report as notebook objects. Real offline runs on the demo vault, whose history folders are given the
artifacts a software run leaves (a real ``Manifest``, a real ``verify`` report, a real write report)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _demo import DEMO

from engine import Run, run
from engine.output import Manifest, ManifestFile, ManifestNote, write_manifest
from engine.verify import verify
from shad_magics import ShadResult
from shad_magics._result import CHECK_COLUMNS, MANIFEST_COLUMNS, ShadArtifactWarning

GOAL = "How long should I rest beans after roasting, and why?"
CORE = "def add(a: int, b: int) -> int:\n    return a + b\n"


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHAD_STORE", str(tmp_path / "store.sqlite3"))
    monkeypatch.delenv("REDIS_URL", raising=False)
    return run(GOAL, str(DEMO), provider="offline", history_dir=str(tmp_path / "history"))


def _manifest(run_id: str) -> Manifest:
    return Manifest(
        files=[
            ManifestFile.make("pkg/__init__.py", "", source_nodes=["contracts"]),
            ManifestFile.make(
                "pkg/core.py", CORE, source_nodes=["contracts", "impl"], source_notes=["[[Code/Adder]]"]
            ),
            ManifestFile.make("pkg/broken.py", "def oops(:\n    pass\n", source_nodes=["impl.2"]),
        ],
        notes=[ManifestNote("contract_change_request", "add() should take floats", "impl")],
        run_id=run_id,
    )


def _make_software(
    run: Run, *, with_verify: bool = True, written: dict[str, Any] | None = None, summary: bool = True
) -> tuple[Manifest, dict[str, Any]]:
    """Give a finished run's history what a software run leaves there; return the manifest and report."""
    folder = run.history.dir
    manifest = _manifest(run.id)
    (folder / "artifacts").mkdir(exist_ok=True)
    manifest.save(folder / "artifacts" / "manifest.json")
    report = verify(manifest, "basic").to_dict()
    if with_verify:
        (folder / "artifacts" / "verify.json").write_text(json.dumps(report), encoding="utf-8")
    if summary:
        data = json.loads((folder / "final.summary.json").read_text(encoding="utf-8"))
        data["software"] = {
            "files": len(manifest.files),
            "level": report["level"],
            "ok": report["ok"],
            "checks": {name: c["status"] for name, c in report["checks"].items()},
            "written": written,
            "manifest": "artifacts/manifest.json",
        }
        (folder / "final.summary.json").write_text(json.dumps(data), encoding="utf-8")
    return manifest, report


def test_manifest_files_and_checks_of_a_software_run(finished: Run) -> None:
    manifest, report = _make_software(finished)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every artifact is well formed: no warning at all
        res = ShadResult(Run.load(finished.id))
        frame, checks = res.manifest, res.checks
    assert res.is_software
    assert isinstance(frame, pd.DataFrame) and tuple(frame.columns) == MANIFEST_COLUMNS
    rows = {r["path"]: r for r in frame.to_dict("records")}
    assert list(frame["path"]) == ["pkg/__init__.py", "pkg/core.py", "pkg/broken.py"]
    core = rows["pkg/core.py"]
    assert (core["language"], core["lines"], core["mode"]) == ("python", 2, "create")
    assert core["hash"] == manifest.files[1].hash.removeprefix("sha256:")[:12]
    assert core["source_nodes"] == "contracts, impl" and core["source_notes"] == "[[Code/Adder]]"
    assert rows["pkg/__init__.py"]["lines"] == 0 and rows["pkg/__init__.py"]["source_notes"] == ""
    # The syntax check found the broken file; the others were checked and found clean.
    assert {p: r["status"] for p, r in rows.items()} == {
        "pkg/__init__.py": "pass",
        "pkg/core.py": "pass",
        "pkg/broken.py": "fail",
    }
    assert res.files == {f.path: f.content for f in manifest.files}
    assert tuple(checks.columns) == CHECK_COLUMNS
    assert checks.to_dict("records") == [
        {"check": name, "status": c["status"], "findings": len(c["findings"]), "reason": c["reason"]}
        for name, c in report["checks"].items()
    ]
    assert checks.set_index("check").loc["syntax", "findings"] == 1
    assert res.verify == report and res.write_report is None


def test_a_software_run_renders_its_files_and_checks(finished: Run, tmp_path: Path) -> None:
    written = write_manifest(_manifest(finished.id), tmp_path / "out").to_dict()
    _make_software(finished, written=written)
    res = ShadResult(Run.load(finished.id))
    assert res.write_report == written and len(written["written"]) == 3
    lines = res.markdown.split("\n\n", 1)[0].splitlines()
    assert lines == [
        "- **Code**: 3 files: `pkg/__init__.py`, `pkg/core.py`, `pkg/broken.py`",
        "- **Checks** (basic): ✗ syntax (1) · ✓ imports · ✓ integrity — a blocking check failed",
        f"- **Written** to `{tmp_path / 'out'}`: 3 written · 0 skipped · 0 refused",
    ]
    assert "[↗](<file://" in res.markdown  # the report and its citation links follow
    data, _ = res._repr_mimebundle_()
    plain = data["text/plain"].splitlines()
    assert plain[0].startswith(f"Shad run {finished.id}: SUCCESS · ")
    assert plain[1] == "Code: 3 files: pkg/__init__.py, pkg/core.py, pkg/broken.py"
    assert plain[2].startswith("Checks (basic): ✗ syntax (1) · ✓ imports")


def test_a_run_that_wrote_no_code_has_empty_frames(finished: Run) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = ShadResult(finished)
        assert not res.is_software
        assert res.manifest.empty and tuple(res.manifest.columns) == MANIFEST_COLUMNS
        assert res.checks.empty and tuple(res.checks.columns) == CHECK_COLUMNS
        assert res.files == {} and res.verify is None and res.write_report is None
        assert "**Code**" not in res.markdown and "Code:" not in res._repr_mimebundle_()[0]["text/plain"]


def test_without_verify_json_files_are_unchecked(finished: Run) -> None:
    folder = finished.history.dir
    (folder / "artifacts").mkdir(exist_ok=True)
    _manifest(finished.id).save(folder / "artifacts" / "manifest.json")  # a manifest, no summary key
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = ShadResult(Run.load(finished.id))
        assert res.is_software and set(res.manifest["status"]) == {"unchecked"}
        assert res.checks.empty and res.verify is None
        assert "- **Checks**: none ran" in res.markdown


def test_a_malformed_manifest_warns_and_gives_an_empty_frame(finished: Run) -> None:
    _make_software(finished)
    (finished.history.dir / "artifacts" / "manifest.json").write_text('{"files": [{"path": 3}', "utf-8")
    res = ShadResult(Run.load(finished.id))
    with pytest.warns(ShadArtifactWarning, match="unreadable manifest .*not valid JSON"):
        frame = res.manifest
    assert frame.empty and tuple(frame.columns) == MANIFEST_COLUMNS
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once, on first access
        assert res.files == {}
        assert not res.checks.empty  # verify.json is fine: its checks still show
        assert "- **Code**: the manifest is unreadable" in res.markdown


def test_a_manifest_of_the_wrong_shape_and_a_broken_verify_json(finished: Run) -> None:
    _make_software(finished)
    artifacts = finished.history.dir / "artifacts"
    (artifacts / "manifest.json").write_text(json.dumps({"files": [{"path": 3, "content": ""}]}), "utf-8")
    (artifacts / "verify.json").write_text(json.dumps(["not", "a", "report"]), "utf-8")
    res = ShadResult(Run.load(finished.id))
    with pytest.warns(ShadArtifactWarning) as caught:
        assert res.manifest.empty and res.checks.empty
    messages = [str(w.message) for w in caught]
    assert any("files[0].path must be a string" in m for m in messages)
    assert any("verify.json is not a verify report" in m for m in messages)


def test_a_missing_manifest_the_summary_announces_warns(finished: Run) -> None:
    _make_software(finished)
    (finished.history.dir / "artifacts" / "manifest.json").unlink()
    (finished.history.dir / "artifacts" / "verify.json").unlink()
    res = ShadResult(Run.load(finished.id))
    with pytest.warns(ShadArtifactWarning) as caught:
        assert res.is_software and res.manifest.empty and res.checks.empty
    assert any("no manifest at" in str(w.message) for w in caught)
    assert any("summary lists checks" in str(w.message) for w in caught)
    # The checks line falls back on the summary's statuses.
    assert "- **Checks** (basic): ✗ syntax · ✓ imports · ✓ integrity" in res.markdown
