"""Run history on disk: ``<first vault>/Shad/History/Runs/<run_id>/`` (or ``--history-dir``; a read-only
vault falls back to ``$SHAD_HOME/history``). Every file is written atomically (temp file + rename),
events are appended and flushed one per line, and no secret ever lands in a file: values of
environment variables that hold keys or tokens are scrubbed from everything written.

``$SHAD_HOME/runs.jsonl`` maps run ids to their folders, so a run is found by id alone.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import json
import os
import re
import secrets
import socket
import threading
import weakref
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from ..config import HISTORY_FOLDER, shad_home
from ..errors import ShadError
from ..fs import atomic_write
from ._together import submit, to_disk_thread, write_together

__all__ = [
    "HISTORY_FOLDER",
    "History",
    "RunNotFoundError",
    "find_run",
    "known_runs",
    "list_runs",
    "new_run_id",
    "process_gone",
    "run_status",
    "scrub",
    "this_process",
    "to_disk_thread",
]

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


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None where there is
    no such file (the process is gone, or this system has no /proc)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()  # the name may hold spaces and parentheses


def this_process() -> dict[str, Any]:
    """Who runs a run, as its manifest records it: pid, host and the process's start time (so a pid
    reused by another process after a kill is not taken for the run's)."""
    stat = _proc_stat(os.getpid())
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": stat[19] if stat and len(stat) > 19 else None,  # field 22: start time, in ticks
    }


def process_gone(info: Any) -> str | None:
    """Why the process a manifest names no longer runs (None: it runs, or this host cannot tell: a
    manifest without one, another host, a system without /proc or ``os.kill``)."""
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return None
    pid, host = info["pid"], info.get("host")
    if host != socket.gethostname():
        return None
    gone = f"the process that ran it (pid {pid} on {host}) is gone"
    stat = _proc_stat(pid)
    if stat is not None:
        if stat[0] in ("Z", "X"):  # killed, not yet reaped by its parent
            return gone
        started = info.get("started")
        return gone if started is not None and len(stat) > 19 and stat[19] != started else None
    if Path("/proc/self/stat").exists():  # this system has /proc, and no entry for the pid
        return gone
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT there
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return gone
    except OSError:  # it exists (another user's): alive
        return None
    return None


def run_status(manifest: dict[str, Any], summary: dict[str, Any]) -> tuple[str, str | None]:
    """A run's status and, when it was interrupted, why: the final summary's, unless the manifest says
    a session started after it and has not finished. That session is RUNNING while its process runs,
    INTERRUPTED once the process is gone (killed: it will never finish by itself)."""
    status = str(summary.get("status") or manifest.get("status") or "UNKNOWN")
    if manifest.get("status") != "RUNNING" or not isinstance(manifest.get("process"), dict):
        return status, None  # finished, or written before runs recorded their process
    gone = process_gone(manifest["process"])
    return ("INTERRUPTED", gone) if gone else ("RUNNING", None)


def _read_dict(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


# The environment the secret list was made from, and that list: each value and its JSON-escaped form.
_secrets_seen: tuple[dict[Any, Any] | None, list[str]] = (None, [])
_SHAPE_STARTS = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_")  # every match of _SECRET_SHAPES has one


def _secret_forms() -> list[str]:
    """The environment's secret values (longest first), each followed by its JSON-escaped form when that
    differs. Looked up again only when the environment changed: comparing it with the copy the list was
    made from costs about a microsecond, matching every name costs far more on every event of a run (and
    a secret set mid-run is still found)."""
    global _secrets_seen
    # The raw (bytes) mapping under os.environ, when there is one: comparing it decodes nothing.
    raw = getattr(os.environ, "_data", None)
    current = raw if isinstance(raw, dict) else dict(os.environ)
    seen, forms = _secrets_seen
    if seen is None or current != seen:
        values = sorted(
            (v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8),
            key=len,
            reverse=True,
        )
        forms = []
        for value in values:
            # Inside JSON a value with quotes or backslashes appears escaped: redact that form too.
            escaped = json.dumps(value, ensure_ascii=False)[1:-1]
            forms += [value] if escaped == value else [value, escaped]
        _secrets_seen = (dict(current), forms)
    return forms


def scrub(text: str) -> str:
    """Replace secret values (from the environment) and anything shaped like an API key with
    ``[redacted]``."""
    for form in _secret_forms():
        if form in text:
            text = text.replace(form, "[redacted]")
    if any(start in text for start in _SHAPE_STARTS):  # the regex scan costs ~5x these lookups
        text = _SECRET_SHAPES.sub("[redacted]", text)
    return text


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


def _append_fd(fd: int, data: bytes, left_at: int | None = None) -> int:
    """``_append_line`` on a descriptor the history keeps open (``O_APPEND``), without opening and closing
    the file for every event. The last byte is checked unless the file ends where this history's last
    line ended (``left_at``): then nobody wrote since, and that line ended with a newline. Returns where
    the file ends after this line."""
    end = os.lseek(fd, 0, os.SEEK_END)
    if end > 0 and end != left_at:
        os.lseek(fd, end - 1, os.SEEK_SET)
        if os.read(fd, 1) != b"\n":
            data = b"\n" + data
    view = memoryview(data)
    while view:  # one write for a line, unless the system cuts it short
        view = view[os.write(fd, view) :]
    return end + len(data)


def _close_fds(fds: dict[str, int]) -> None:
    for fd in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


def _dumps(data: Any, *, compact: bool = False) -> str:
    # A checkpoint rewritten many times a run is written compact: no indentation to build and write.
    layout: dict[str, Any] = {"separators": (",", ":")} if compact else {"indent": 2}
    return scrub(json.dumps(data, ensure_ascii=False, default=str, **layout))


class History:
    """The folder of one run."""

    def __init__(self, run_dir: Path, run_id: str) -> None:
        self.dir = run_dir
        self.run_id = run_id
        self._lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queued: dict[str, Any] = {}  # checkpoint files waiting for the writer thread
        self._writer: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []
        # The files ``append`` writes, kept open until ``close`` (or until this object is collected).
        self._fds: dict[str, int] = {}
        self._ends: dict[str, int] = {}  # where each file ended after this history's last line
        weakref.finalize(self, _close_fds, self._fds)
        for sub in ("decisions", "metrics", "errors", "artifacts", "replay"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)

    @classmethod
    def create(cls, run_id: str, first_vault: str | None, history_dir: str | None = None) -> History:
        """Make the run's folder where the user asked, else in the vault (None: a vault read through a
        backend, with no folder), else under ``$SHAD_HOME``."""
        candidates = [Path(history_dir).expanduser() / run_id] if history_dir else []
        if first_vault:
            candidates.append(Path(first_vault) / HISTORY_FOLDER / "Runs" / run_id)
        candidates.append(shad_home() / "history" / run_id)
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

    def write_json(self, rel: str, data: Any, *, compact: bool = False) -> Path:
        """Write ``data`` now (indented, or ``compact`` for a large file that is read by programs)."""
        self.flush()  # an older checkpoint of the same file must not land after this write
        path = self.dir / rel
        atomic_write(path, _dumps(data, compact=compact) + "\n")
        return path

    def write_together(
        self,
        files: Sequence[tuple[str, Any]],
        *,
        last: tuple[str, Any],
        compact: Collection[str] = (),
        alongside: Sequence[Callable[[], object]] = (),
    ) -> None:
        """Write several files at once, ``last`` once every other one is in place (the run's end: the
        manifest that says it finished). Each is atomic and fsynced; their fsyncs (and the ``alongside``
        writes) overlap, so the disk is waited for once (``_together``). A str is the file's text,
        anything else JSON (compact for the files named in ``compact``); all of it scrubbed, encoded
        here one after the other (encoding in several threads at once only fought over the GIL)."""
        with self._queue_lock:  # a checkpoint of one of these still queued is superseded: dropped
            for rel, _ in [*files, last]:
                self._queued.pop(rel, None)

        started = [submit(write) for write in alongside]  # they encode and wait while these are encoded

        def text(rel: str, data: Any) -> str:
            return scrub(data) if isinstance(data, str) else _dumps(data, compact=rel in compact) + "\n"

        try:
            texts = [(rel, text(rel, data)) for rel, data in files]
            final = (last[0], text(*last))
        except BaseException:
            wait(started)  # nothing is left writing behind the error
            raise
        # One being written must land before these: waited for before the renames, its fsync beside theirs.
        write_together(self.dir, texts, final, started, before_rename=self.flush)

    def write_json_soon(self, rel: str, data: Any, *, compact: bool = True) -> None:
        """Write ``data`` (compact unless told) on the history's writer thread, so the run's event loop
        goes on; a write of the same file still waiting is replaced, not written twice. ``flush`` (and
        ``close``, and any ``write_json``) waits for it."""
        with self._queue_lock:
            self._queued[rel] = (data, compact)
            if self._writer is None:
                self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"history-{self.run_id}")
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self._writer.submit(self._write_queued, rel))

    def _write_queued(self, rel: str) -> None:
        with self._queue_lock:
            if rel not in self._queued:
                return  # a later submission already wrote it
            data, compact = self._queued.pop(rel)
        atomic_write(self.dir / rel, _dumps(data, compact=compact) + "\n")

    def flush(self) -> None:
        """Wait for the writes ``write_json_soon`` queued (their errors are raised here)."""
        with self._queue_lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def close(self) -> None:
        self.flush()
        with self._queue_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)
        with self._lock:  # a later append (a checkpoint decided after the run paused) opens its file again
            _close_fds(self._fds)
            self._ends.clear()

    def write_text(self, rel: str, text: str) -> Path:
        path = self.dir / rel
        atomic_write(path, scrub(text))
        return path

    def append(self, rel: str, record: dict[str, Any]) -> None:
        """One JSON line, flushed at once: a killed run keeps every event before the kill."""
        line = (scrub(json.dumps(record, ensure_ascii=False, default=str)) + "\n").encode("utf-8")
        with self._lock:
            fd = self._fds.get(rel)
            if fd is None:
                flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
                fd = self._fds[rel] = os.open(self.dir / rel, flags, 0o666)
            self._ends[rel] = _append_fd(fd, line, self._ends.get(rel))

    def read_text(self, rel: str) -> str:
        """A file of the run, also once ``shad history gc`` compressed it (``rel`` + ``.gz``)."""
        path = self.dir / rel
        packed = path.with_name(path.name + ".gz")
        if not path.exists() and packed.exists():
            return gzip.decompress(packed.read_bytes()).decode("utf-8")
        return path.read_text(encoding="utf-8")

    def read_json(self, rel: str) -> Any:
        return json.loads(self.read_text(rel))

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


def known_runs() -> dict[str, Path]:
    """Every run this ``$SHAD_HOME`` has started, by id, with its folder (which may be gone since)."""
    return _known_runs()


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
        summary, manifest = (
            _read_dict(folder / "final.summary.json"),
            _read_dict(folder / "run.manifest.json"),
        )
        status, _ = run_status(manifest, summary) if summary or manifest else ("UNKNOWN", None)
        goal = summary.get("goal") or manifest.get("config", {}).get("goal", "")
        out.append({"run_id": run_id, "dir": str(folder), "status": status, "goal": goal})
    return out
