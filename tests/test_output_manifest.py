"""The code manifest: its JSON shape round-trips, bad manifest files fail with a clear UsageError, and a
project folder becomes a manifest of its text files with its declared dependencies."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from engine.errors import UsageError
from engine.output import Manifest, ManifestFile, ManifestNote, manifest_from_dir


def _sample() -> Manifest:
    return Manifest(
        files=[
            ManifestFile.make(
                "src/types.ts", "export interface User { id: string }\n", source_nodes=["types"]
            ),
            ManifestFile.make(
                "src/pkg/retry.py",
                "def retry():\n    return 'ä'\n",
                mode="overwrite",
                source_nodes=["impl_retry"],
                source_notes=["[[Patterns/Retry]]"],
            ),
        ],
        notes=[ManifestNote("contract_change_request", "Add UserRole enum", node="impl_api")],
        run_id="abc123",
        dependencies=["yaml"],
    )


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/a.py", "python"),
        ("stubs/a.pyi", "python"),
        ("src/types.ts", "typescript"),
        ("src/App.TSX", "typescript"),
        ("types/global.d.ts", "typescript"),
        ("index.mjs", "javascript"),
        ("package.json", "json"),
        ("pyproject.toml", "toml"),
        ("README.md", "markdown"),
        ("Dockerfile", "dockerfile"),
        ("notes", "text"),
        ("weird.xyz", "text"),
    ],
)
def test_make_detects_the_language_from_the_suffix(path: str, language: str) -> None:
    assert ManifestFile.make(path, "x").language == language


def test_make_fills_the_hash_and_rejects_nothing() -> None:
    f = ManifestFile.make("../../etc/passwd", "héllo")
    assert f.hash == "sha256:" + hashlib.sha256("héllo".encode()).hexdigest()
    assert f.path == "../../etc/passwd"  # kept as given: check_integrity judges it
    assert ManifestFile.make("", "\udcff").hash.startswith("sha256:")  # lone surrogate: still hashed
    assert ManifestFile.make("a.py", "x", language="python3").language == "python3"


def test_dict_round_trip_keeps_everything() -> None:
    manifest = _sample()
    data = manifest.to_dict()
    assert set(data) == {"run_id", "files", "notes", "dependencies"}
    assert set(data["files"][0]) == {
        "path",
        "content",
        "language",
        "mode",
        "hash",
        "source_nodes",
        "source_notes",
    }
    assert data["notes"] == [
        {"kind": "contract_change_request", "detail": "Add UserRole enum", "node": "impl_api"}
    ]
    assert Manifest.from_dict(json.loads(json.dumps(data))) == manifest


def test_file_round_trip(tmp_path: Path) -> None:
    manifest = _sample()
    target = tmp_path / "run" / "artifacts" / "manifest.json"
    manifest.save(target)
    assert Manifest.load(target) == manifest
    assert "'ä'" in target.read_text(encoding="utf-8")  # readable UTF-8, not \u escapes
    assert [p.name for p in target.parent.iterdir()] == ["manifest.json"]  # no temp file left


def test_save_keeps_content_that_is_not_valid_unicode(tmp_path: Path) -> None:
    manifest = Manifest(files=[ManifestFile.make("a.py", "x = '\udcff'\n")])
    manifest.save(tmp_path / "m.json")
    assert Manifest.load(tmp_path / "m.json") == manifest


def test_from_dict_accepts_the_seed_shape_and_fills_what_is_missing() -> None:
    seed = {
        "files": [
            {"path": "src/types.ts", "content": "export type A = 1", "language": "ts", "hash": ""},
            {"path": "src/api/users.ts", "content": "x", "source_nodes": ["impl_api"]},
        ],
        "notes": [{"kind": "contract_change_request", "detail": "Add UserRole enum"}],
    }
    manifest = Manifest.from_dict(seed)
    assert manifest.files[0].language == "ts"  # given: kept
    assert manifest.files[1].language == "typescript"
    assert manifest.files[1].hash == ManifestFile.make("x", "x").hash
    assert manifest.files[1].mode == "create"
    assert manifest.notes == [ManifestNote("contract_change_request", "Add UserRole enum")]
    assert manifest.run_id == "" and manifest.dependencies == []


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "top level must be an object"),
        ('{"files": {}}', "files must be a list"),
        ('{"files": [{"path": 3, "content": ""}]}', "files[0].path must be a string"),
        ('{"files": [{"path": "a"}]}', "files[0].content must be a string"),
        ('{"files": [{"path": "a", "content": "", "mode": "append"}]}', "files[0].mode"),
        ('{"files": [{"path": "a", "content": "", "source_nodes": "n"}]}', "source_nodes must be a list"),
        ('{"notes": [{"detail": "x"}]}', "notes[0].kind must be a string"),
        ('{"dependencies": [1]}', "dependencies must be a list of strings"),
        ('{"run_id": 5}', "run_id must be a string"),
    ],
)
def test_load_errors_are_clear(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as info:
        Manifest.load(path)
    assert fragment in info.value.message
    assert info.value.hint


def test_load_of_a_missing_file_or_a_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no manifest at"):
        Manifest.load(tmp_path / "nope.json")
    with pytest.raises(UsageError, match="is a folder"):
        Manifest.load(tmp_path)
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="not UTF-8"):
        Manifest.load(tmp_path / "bin.json")


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def test_manifest_from_dir_reads_a_small_project(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    _write(outside, {"secret.py": "TOKEN = 'x'\n", "lib/mod.py": "x = 1\n"})
    _write(
        project,
        {
            "pyproject.toml": '[project]\nname = "demo"\ndependencies = ["PyYAML>=6", "requests"]\n'
            '[project.optional-dependencies]\ndev = ["pytest>=8", "types-PyYAML"]\n',
            "requirements.txt": "# pinned\nbeautifulsoup4==4.12\n-r other.txt\n"
            "scikit-learn[alldeps]>=1.0; python_version > '3.8'\n--index-url https://x\nPillow\n",
            "requirements-dev.txt": "Typing-Extensions\n",
            "src/demo/__init__.py": "from .core import run\n",
            "src/demo/core.py": "def run() -> int:\n    return 1\n",
            "README.md": "# Demo\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
            "data.bin.txt": b"abc\x00def",
            "latin1.txt": "caf\xe9".encode("latin-1"),
            "big.py": "x = 1\n" * 100,
            ".env": "SECRET=1\n",
            ".git/config": "[core]\n",
            ".venv/lib/site.py": "x\n",
            "__pycache__/core.cpython-311.pyc": b"\x00\x01",
            "node_modules/left-pad/index.js": "module.exports = 1\n",
            "demo.egg-info/PKG-INFO": "Name: demo\n",
            ".github/workflows/ci.yml": "on: push\n",
        },
    )
    os.symlink(outside / "secret.py", project / "src" / "secret.py")  # a file outside: not followed
    os.symlink(outside / "lib", project / "lib")  # a folder outside: not followed
    os.symlink(project / "src" / "demo" / "core.py", project / "core_link.py")  # inside: read
    os.symlink(project / "src", project / "src_link")  # a folder inside: not entered

    manifest = manifest_from_dir(project, max_bytes=500)

    assert [f.path for f in manifest.files] == [
        "README.md",
        "core_link.py",
        "pyproject.toml",
        "requirements-dev.txt",
        "requirements.txt",
        "src/demo/__init__.py",
        "src/demo/core.py",
    ]
    assert manifest.files[0] == ManifestFile.make("README.md", "# Demo\n")
    assert manifest.dependencies == [
        "PIL",
        "bs4",
        "pytest",
        "requests",
        "sklearn",
        "typing_extensions",
        "yaml",
    ]
    details = [n.detail for n in manifest.notes]
    assert all(n.kind == "skipped" for n in manifest.notes)
    assert "big.py: larger than 500 bytes; not read" in details
    assert "latin1.txt: not UTF-8 text; not read" in details
    assert "src/secret.py: symlink points outside the folder; not followed" in details
    assert "lib: symlink points outside the folder; not followed" in details
    assert "src_link: symlinked folder; not followed" in details
    assert not any("secret" in f.content or "TOKEN" in f.content for f in manifest.files)


def test_manifest_from_dir_stops_at_max_files(tmp_path: Path) -> None:
    _write(tmp_path, {f"m{i}.py": "x = 1\n" for i in range(5)})
    manifest = manifest_from_dir(tmp_path, max_files=3)
    assert [f.path for f in manifest.files] == ["m0.py", "m1.py", "m2.py"]
    assert manifest.notes == [ManifestNote("skipped", "stopped after 3 files; the rest were not read")]


def test_manifest_from_dir_of_a_missing_folder_or_a_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        manifest_from_dir(tmp_path / "nope")
    (tmp_path / "f.py").write_text("x\n", encoding="utf-8")
    with pytest.raises(UsageError, match="is not a folder"):
        manifest_from_dir(tmp_path / "f.py")
