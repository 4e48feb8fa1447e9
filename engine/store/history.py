"""Run history on disk: ``<first vault>/Shad/History/Runs/<run_id>/`` (or ``--history-dir``; a read-only
vault falls back to ``$SHAD_HOME/history``). Every file is written atomically (temp file + rename),
events are appended and flushed one per line, and no secret ever lands in a file: values of
environment variables that hold keys or tokens are scrubbed from everything written.

``$SHAD_HOME/runs.jsonl`` maps run ids to their folders, so a run is found by id alone.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
import threading
from pathlib import Path
from typing import Any

from ..config import HISTORY_FOLDER, shad_home
from ..errors import ShadError
from ..fs import atomic_write

__all__ = ["HISTORY_FOLDER", "History", "RunNotFoundError", "find_run", "list_runs", "new_run_id", "scrub"]

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.I)
_SECRET_SHAPES = re.compile(
    r"\b(sk-ant-[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{16,})\b"
)


class RunNotFoundError(ShadError):
    """No run with that id is known here."""


_ISSUED: set[str] = set()
_ISSUED_LOCK = threading.Lock()


def new_run_id() -> str:
    """Sortable and unique: ``20261122-031500-a1b2``. Four random hex digits could repeat within one
    second of one process (a batch), so the process never hands out the same id twice."""
    with _ISSUED_LOCK:
        while True:
            run_id = dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
            if run_id not in _ISSUED:
                _ISSUED.add(run_id)
                return run_id


def _secret_values() -> list[str]:
    return sorted(
        (v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8), key=len, reverse=True
    )


def scrub(text: str) -> str:
    """Replace secret values (from the environment, or shaped like API keys) with ``[redacted]``."""
    for value in _secret_values():
        # Inside JSON a value with quotes or backslashes appears escaped: redact that form too.
        for form in {value, json.dumps(value, ensure_ascii=False)[1:-1]}:
            if form in text:
                text = text.replace(form, "[redacted]")
    return _SECRET_SHAPES.sub("[redacted]", text)


def _append_line(path: Path, line: str) -> None:
    """Append one line; if a killed writer left the last line unfinished, start on a fresh line so the
    new record is not glued to (and lost with) the broken one."""
    with path.open("a+b") as fh:
        if fh.tell() > 0:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = "\n" + line
        fh.write(line.encode("utf-8"))
        fh.flush()


def _dumps(data: Any) -> str:
    return scrub(json.dumps(data, ensure_ascii=False, indent=2, default=str))


class History:
    """The folder of one run."""

    def __init__(self, run_dir: Path, run_id: str) -> None:
        self.dir = run_dir
        self.run_id = run_id
        self._lock = threading.Lock()
        for sub in ("decisions", "metrics", "errors", "artifacts", "replay"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)

    @classmethod
    def create(cls, run_id: str, first_vault: str, history_dir: str | None = None) -> History:
        """Make the run's folder where the user asked, else in the vault, else under ``$SHAD_HOME``."""
        candidates = [Path(history_dir).expanduser() / run_id] if history_dir else []
        candidates += [Path(first_vault) / HISTORY_FOLDER / "Runs" / run_id, shad_home() / "history" / run_id]
        last_error: OSError | None = None
        for folder in candidates:
            if folder.exists():
                raise ShadError(
                    f"a run folder already exists: {folder}", hint="run ids are unique; use a new one"
                )
            try:
                folder.mkdir(parents=True, exist_ok=False)
                probe = folder / ".write-test"
                probe.write_text("ok")
                probe.unlink()
            except OSError as exc:
                if history_dir and folder == candidates[0]:
                    raise ShadError(
                        f"cannot write run history to {folder}: {exc.strerror}",
                        hint="pass a writable --history-dir",
                    ) from exc
                last_error = exc
                continue
            history = cls(folder, run_id)
            _register(run_id, folder)
            return history
        raise ShadError(
            f"no writable place for run history ({last_error})", hint="set SHAD_HOME to a writable folder"
        )

    def write_json(self, rel: str, data: Any) -> Path:
        path = self.dir / rel
        atomic_write(path, _dumps(data) + "\n")
        return path

    def write_text(self, rel: str, text: str) -> Path:
        path = self.dir / rel
        atomic_write(path, scrub(text))
        return path

    def append(self, rel: str, record: dict[str, Any]) -> None:
        """One JSON line, flushed at once: a killed run keeps every event before the kill."""
        line = scrub(json.dumps(record, ensure_ascii=False, default=str)) + "\n"
        with self._lock:
            _append_line(self.dir / rel, line)

    def read_json(self, rel: str) -> Any:
        return json.loads((self.dir / rel).read_text(encoding="utf-8"))

    def read_lines(self, rel: str) -> list[dict[str, Any]]:
        path = self.dir / rel
        if not path.exists():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill: everything before it still counts
        return out


def _index_path() -> Path:
    return shad_home() / "runs.jsonl"


def _register(run_id: str, folder: Path) -> None:
    path = _index_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    _append_line(path, json.dumps({"run_id": run_id, "dir": str(folder)}) + "\n")


def _known_runs() -> dict[str, Path]:
    path = _index_path()
    runs: dict[str, Path] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
                runs[str(rec["run_id"])] = Path(rec["dir"])
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a line cut by a kill, or not ours: the other runs are still found
    return runs


def find_run(run_id: str) -> History:
    """A run's history by id (or by the path of its folder)."""
    as_path = Path(run_id).expanduser()
    if (as_path / "run.manifest.json").exists():
        return History(as_path, as_path.name)
    folder = _known_runs().get(run_id)
    if folder is None or not (folder / "run.manifest.json").exists():
        raise RunNotFoundError(f"no run {run_id!r} found", hint="`shad runs` lists recent runs")
    return History(folder, run_id)


def list_runs(limit: int = 20) -> list[dict[str, Any]]:
    """Recent runs, newest first, with their status and goal when the folder still exists.

    Ids sort by their time stamp; runs started within the same second (whose ids differ only by the
    random suffix) keep the order they were registered in, as each run starts."""
    known = list(_known_runs().items())
    order = sorted(range(len(known)), key=lambda i: (known[i][0].rsplit("-", 1)[0], i), reverse=True)
    out = []
    for run_id, folder in [known[i] for i in order[:limit]]:
        info: dict[str, Any] = {"run_id": run_id, "dir": str(folder), "status": "UNKNOWN", "goal": ""}
        for name in ("final.summary.json", "run.manifest.json"):
            try:
                data = json.loads((folder / name).read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            info["status"] = data.get("status", info["status"])
            info["goal"] = data.get("goal") or data.get("config", {}).get("goal", "")
            break
        out.append(info)
    return out
