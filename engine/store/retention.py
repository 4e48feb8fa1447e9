"""Retention (P6): run histories move from hot to warm to cold as they age, unless pinned or running.

- **hot** (younger than ``HOT_DAYS``, 7 days): everything kept as written;
- **warm** (younger than ``WARM_DAYS``, 30 days): files under ``artifacts/`` larger than
  ``WARM_MIN_BYTES`` (64 KB) are gzip-compressed in place (``History.read_json`` / ``read_text`` read
  them back); the code manifest, the workspace, the export index and ``verify.json`` stay plain;
- **cold** (older): only ``run.manifest.json``, ``final.report.md``, ``final.summary.json`` and the code
  manifest are kept: ``shad status`` still works, a resume plans the run again (what the cache still
  holds is not paid for twice), a replay is no longer possible.

A run's age is the time since its last session ended (the newest of its summary and manifest). Running
runs and pinned runs (``pin``: ``shad run pin RUN_ID``) are never touched. The tier and the pin are kept
in the run's own ``retention.json`` (the manifest is rewritten by every session of a run).
``collect(dry_run=True)`` says what would happen and changes nothing. Only regular files inside a run's
own folder are touched.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..fs import atomic_write
from .history import find_run, known_runs, run_status

__all__ = ["HOT_DAYS", "TIERS", "WARM_DAYS", "GcAction", "GcReport", "collect", "pin", "tier_of"]

HOT_DAYS = 7.0
WARM_DAYS = 30.0
WARM_MIN_BYTES = 64 * 1024
TIERS = ("hot", "warm", "cold")
STATE_FILE = "retention.json"
KEEP_COLD = (
    "run.manifest.json",
    "final.report.md",
    "final.summary.json",
    "artifacts/manifest.json",
    STATE_FILE,
)
KEEP_PLAIN = frozenset({"manifest.json", "workspace.json", "export_index.json", "verify.json"})
DAY = 86_400.0


@dataclass
class GcAction:
    """What ``collect`` does (or would do) to one run."""

    run_id: str
    dir: str
    tier: str  # where it is now
    target: str  # where its age puts it
    action: str  # keep | compress | reduce | skip
    reason: str
    files: list[str] = field(default_factory=list)  # the files compressed or removed
    bytes_freed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GcReport:
    dry_run: bool
    hot_days: float
    warm_days: float
    actions: list[GcAction] = field(default_factory=list)

    @property
    def bytes_freed(self) -> int:
        return sum(a.bytes_freed for a in self.actions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "hot_days": self.hot_days,
            "warm_days": self.warm_days,
            "bytes_freed": self.bytes_freed,
            "runs": [a.to_dict() for a in self.actions],
        }


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def tier_of(folder: Path) -> str:
    """The tier a run's folder is in (hot unless ``history gc`` moved it)."""
    return _tier(_read(folder / STATE_FILE))


def _tier(state: dict[str, Any]) -> str:
    tier = state.get("tier")
    return tier if isinstance(tier, str) and tier in TIERS else "hot"


def _save_state(folder: Path, **changes: Any) -> dict[str, Any]:
    state = {**_read(folder / STATE_FILE), **changes}
    atomic_write(folder / STATE_FILE, json.dumps(state, indent=2) + "\n")
    return state


def _age_days(folder: Path, now: float) -> float:
    stamps = [
        p.stat().st_mtime for p in (folder / "final.summary.json", folder / "run.manifest.json") if p.exists()
    ]
    return (now - max(stamps)) / DAY if stamps else 0.0


def _files(folder: Path) -> list[Path]:
    """Regular files inside ``folder`` (never following a link out of it)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                out.append(path)
    return sorted(out)


def _warm_files(folder: Path) -> list[Path]:
    return [
        p
        for p in _files(folder / "artifacts")
        if p.suffix != ".gz" and p.name not in KEEP_PLAIN and p.stat().st_size > WARM_MIN_BYTES
    ]


def _cold_files(folder: Path) -> list[Path]:
    keep = {folder / rel for rel in KEEP_COLD}
    return [p for p in _files(folder) if p not in keep]


def _compress(path: Path) -> int:
    """Gzip ``path`` to ``path.gz`` (written fully first, then the original removed); bytes saved."""
    target = path.with_name(path.name + ".gz")
    tmp = path.with_name(f".{path.name}.gz.tmp")
    with path.open("rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    os.replace(tmp, target)
    saved = path.stat().st_size - target.stat().st_size
    path.unlink()
    return saved


def _plan(run_id: str, folder: Path, now: float, hot_days: float, warm_days: float) -> GcAction:
    manifest, summary = _read(folder / "run.manifest.json"), _read(folder / "final.summary.json")
    state = _read(folder / STATE_FILE)
    tier = _tier(state)
    age = _age_days(folder, now)
    target = "hot" if age < hot_days else "warm" if age < warm_days else "cold"
    action = GcAction(run_id, str(folder), tier, target, "keep", f"{age:.1f} days old")
    if not manifest:
        action.action, action.reason = "skip", "no run manifest (not a run folder, or unreadable)"
    elif state.get("pinned"):
        action.action, action.reason = "skip", "pinned"
    elif run_status(manifest, summary)[0] == "RUNNING":
        action.action, action.reason = "skip", "running"
    elif TIERS.index(target) > TIERS.index(tier) or (target == "warm" and _warm_files(folder)):
        files = _warm_files(folder) if target == "warm" else _cold_files(folder)
        action.action = "compress" if target == "warm" else "reduce"
        action.files = [str(p.relative_to(folder)) for p in files]
    return action


def _apply(action: GcAction) -> None:
    folder = Path(action.dir)
    freed = 0
    for rel in action.files:
        path = folder / rel
        if not path.is_file() or path.is_symlink():
            continue
        if action.action == "compress":
            freed += _compress(path)
        else:
            freed += path.stat().st_size
            path.unlink()
    if action.action == "reduce":  # the folders the removed files leave empty go too
        for dirpath in sorted((d for d, _, _ in os.walk(folder)), key=len, reverse=True):
            if Path(dirpath) != folder and not os.listdir(dirpath):
                os.rmdir(dirpath)
    _save_state(folder, tier=action.target, moved_at=round(time.time(), 3))
    action.bytes_freed = freed


def collect(
    *,
    dry_run: bool = False,
    hot_days: float = HOT_DAYS,
    warm_days: float = WARM_DAYS,
    now: float | None = None,
) -> GcReport:
    """Move every known run to the tier its age calls for (``dry_run``: only say so)."""
    if not 0 <= hot_days <= warm_days:
        from ..errors import UsageError

        raise UsageError(
            f"the hot tier ({hot_days:g} days) must not outlast the warm one ({warm_days:g} days)",
            hint="e.g. --hot-days 7 --warm-days 30",
        )
    report = GcReport(dry_run, hot_days, warm_days)
    moment = time.time() if now is None else now
    for run_id, folder in sorted(known_runs().items()):
        if not (folder / "run.manifest.json").is_file():
            continue  # gone already, or moved: nothing of it is ours to touch
        action = _plan(run_id, folder, moment, hot_days, warm_days)
        if action.action in ("compress", "reduce"):
            if dry_run:
                action.bytes_freed = sum((folder / f).stat().st_size for f in action.files)
            else:
                _apply(action)
        report.actions.append(action)
    return report


def pin(run_id: str, pinned: bool = True) -> dict[str, Any]:
    """Pin (or unpin) a run: ``history gc`` never touches a pinned run."""
    history = find_run(run_id)
    _save_state(history.dir, pinned=pinned)
    return {"run_id": history.run_id, "pinned": pinned, "tier": tier_of(history.dir), "dir": str(history.dir)}
