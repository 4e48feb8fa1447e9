"""``ShadResult``: a finished run as a notebook object. It renders as the cited report, whose citations
are links that open the note in Obsidian (``obsidian://open``) with a local-file link beside them, and
carries the run's machine-readable outcome as ``application/vnd.shad.run+json`` for ``shad batch``.
A software run's code manifest, check results and write report are read (lazily) from its history."""

from __future__ import annotations

import json
import posixpath
import re
import warnings
from pathlib import Path
from typing import Any

from engine import Run, RunStatus
from engine.errors import ShadError
from engine.output import Manifest
from engine.retrieval.citations import extract_citations

from ._errors import ShadUsageError
from ._links import _link_for as _link_for  # (shad_magics._reprs links citations the same way)
from ._links import citation_links, vault_roots
from ._reprs import Citations, metrics_frame, run_graph

__all__ = ["FORMATS", "MIME", "ShadArtifactWarning", "ShadResult", "citation_links", "vault_roots"]

FORMATS = ("markdown", "json", "text")
MIME = "application/vnd.shad.run+json"
_CODE = re.compile(r"(^(```|~~~).*?^\2[^\n]*$|`[^`\n]*`)", re.M | re.S)
_FAILED = (RunStatus.FAILED, RunStatus.FAILED_WITH_DIAGNOSTIC)
MANIFEST_COLUMNS = ("path", "language", "lines", "mode", "hash", "source_nodes", "source_notes", "status")
CHECK_COLUMNS = ("check", "status", "findings", "reason")
_MARKS = {"pass": "✓", "fail": "✗", "skip": "–"}
_SHOWN_FILES = 5  # paths the rendered result names before "and N more"


class ShadArtifactWarning(UserWarning):
    """A software run's ``artifacts/manifest.json`` or ``artifacts/verify.json`` is missing or malformed:
    the result shows empty frames for it instead of raising."""


def _norm(path: str) -> str:
    return posixpath.normpath(path.replace("\\", "/")).removeprefix("./")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


class ShadResult:
    """A finished run: ``.report``, ``.summary``, ``.metrics`` (DataFrame), ``.dag`` (networkx),
    ``.citations``, ``.run``. ``format`` ("markdown", "json", "text") picks how it displays.

    A software run (``.is_software``) also has ``.manifest`` (DataFrame, one row per file: path,
    language, lines, mode, hash (short), source_nodes, source_notes, status), ``.files`` (path -> content),
    ``.checks`` (DataFrame: check, status, findings, reason), ``.verify`` (``verify.json`` as a dict) and
    ``.write_report`` (what ``--write-files`` did, or None). A file's ``status`` is ``fail`` when a check
    found something in it, ``pass`` when checks ran and found nothing there, ``unchecked`` when none ran.
    For any other run these are empty: ``.manifest`` and ``.checks`` are empty DataFrames with the same
    columns, ``.files`` is ``{}``, ``.verify`` and ``.write_report`` are None. The artifacts are read on
    first access; a missing or malformed one gives empty frames and a ``ShadArtifactWarning``, not an error.
    """

    def __init__(self, run: Run, *, format: str = "markdown", widget: Any = None) -> None:
        if format not in FORMATS:
            raise ShadUsageError(f"unknown result format {format!r}", hint=f"formats: {', '.join(FORMATS)}")
        self.run = run
        self.format = format
        self.widget = widget  # the DagExplorer that showed the run, if any
        # A paused run's CheckpointPanel in a notebook (.widgets: one CheckpointWidget per checkpoint,
        # .decide() from code as a click would); None otherwise.
        self.checkpoints: Any = None
        roots = vault_roots(run.config.vaults) if run.config is not None else {}
        self._roots = roots
        # a list of dicts that shows as a table of clickable notes
        self.citations: list[dict[str, Any]] = Citations(citation_links(run.citations, roots))
        self._metrics: Any = None
        self._display_id: str | None = None  # the display this result shows in (replaced on a resume)
        self._view: Any = None  # the RunView of the cell that ran it, if any
        self._markdown: str | None = None
        # A software run's artifacts, read on first access: the manifest, verify.json, the two frames.
        self._code: tuple[Manifest | None, dict[str, Any] | None] | None = None
        self._frames_cache: tuple[Any, Any] | None = None

    # --- plain attributes --------------------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        """The run's id (its history folder's name)."""
        return self.run.id

    @property
    def status(self) -> RunStatus:
        """SUCCESS, PARTIAL, FAILED, NEEDS_HUMAN or FAILED_WITH_DIAGNOSTIC."""
        return self.run.status

    @property
    def ok(self) -> bool:
        """True when the run succeeded completely."""
        return self.run.status is RunStatus.SUCCESS

    @property
    def report(self) -> str:
        """The report note exactly as written to history (frontmatter and wikilinks included)."""
        return self.run.report

    @property
    def summary(self) -> dict[str, Any]:
        """``final.summary.json``: metrics, citations, failures, missing branches, stop reason."""
        return self.run.summary

    @property
    def metrics(self) -> Any:
        """One row per node (pandas DataFrame)."""
        if self._metrics is None:
            self._metrics = metrics_frame(self.run.metrics)  # a DataFrame that shows readable columns
        return self._metrics

    @property
    def dag(self) -> Any:
        """The run's DAG as a ``networkx.DiGraph``: node attributes are each node's fields, edge ``kind``
        is child / hard / soft. It shows in a notebook as a table of its nodes."""
        graph = run_graph(self.run.id)
        for node in self.run.dag:
            graph.add_node(node.id, **node.to_dict())
        for a, b, data in self.run.dag.graph.edges(data=True):
            if a in graph and b in graph:
                graph.add_edge(a, b, **data)
        return graph

    def to_json(self) -> dict[str, Any]:
        """The ``application/vnd.shad.run+json`` payload."""
        config = self.run.config
        return {
            "run_id": self.run.id,
            "status": self.run.status.value,
            "exit_code": self.run.exit_code,
            "goal": self.summary.get("goal") or (config.goal if config is not None else ""),
            "metrics": self.summary.get("metrics", {}),
            "citations": self.citations,
            "failures": list(self.summary.get("failures", self.run.failures)),
            "history_dir": str(self.run.history.dir),
        }

    # --- a software run ----------------------------------------------------------------------------------

    def _info(self) -> dict[str, Any]:
        info = self.summary.get("software")
        return info if isinstance(info, dict) else {}

    def _artifact(self, name: str) -> Path:
        rel = self._info().get(name) if name == "manifest" else None
        return self.run.history.dir / (rel if isinstance(rel, str) and rel else f"artifacts/{name}.json")

    @property
    def is_software(self) -> bool:
        """True when the run produced code (its summary says so, or its history holds a manifest)."""
        return bool(self._info()) or self._artifact("manifest").is_file()

    def _load(self) -> tuple[Manifest | None, dict[str, Any] | None]:
        """(manifest, verify.json), read once; what is missing or malformed is None, with a warning."""
        if self._code is not None:
            return self._code
        manifest, verify, path = None, None, self._artifact("verify")
        if self.is_software:
            try:
                manifest = Manifest.load(self._artifact("manifest"))
            except (ShadError, OSError, ValueError) as exc:
                _warn(f"run {self.run.id}: unreadable manifest ({exc}); .manifest and .files are empty")
            try:
                verify = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
                checks = verify.get("checks") if isinstance(verify, dict) else None
                if verify is not None and not isinstance(checks, dict):
                    raise ValueError("no checks object")
            except (OSError, ValueError) as exc:
                verify = None
                _warn(f"run {self.run.id}: {path} is not a verify report ({exc}); .checks is empty")
            if not path.is_file() and self._info().get("checks"):
                _warn(f"run {self.run.id}: its summary lists checks but {path} is missing; .checks is empty")
        self._code = (manifest, verify)
        return self._code

    def _checks(self) -> dict[str, dict[str, Any]]:
        checks = (self._load()[1] or {}).get("checks", {})
        return {str(k): v for k, v in checks.items() if isinstance(v, dict)}

    def _frames(self) -> tuple[Any, Any]:
        manifest = self._load()[0]
        if self._frames_cache is None:
            import pandas as pd

            checks = self._checks()
            found = [f for c in checks.values() for f in c.get("findings") or [] if isinstance(f, dict)]
            failing = {_norm(str(f.get("path") or "")) for f in found}
            ran = any(c.get("status") in ("pass", "fail") for c in checks.values())
            files = [
                (
                    f.path, f.language, len(f.content.splitlines()), f.mode, f.hash.split(":")[-1][:12],
                    ", ".join(f.source_nodes), ", ".join(f.source_notes),
                    "fail" if _norm(f.path) in failing else "pass" if ran else "unchecked",
                )
                for f in (manifest.files if manifest is not None else [])
            ]  # fmt: skip
            rows = [
                (name, str(c.get("status") or ""), len(c.get("findings") or []), str(c.get("reason") or ""))
                for name, c in checks.items()
            ]
            self._frames_cache = (
                pd.DataFrame(files, columns=list(MANIFEST_COLUMNS)).astype({"lines": "int64"}),
                pd.DataFrame(rows, columns=list(CHECK_COLUMNS)).astype({"findings": "int64"}),
            )
        return self._frames_cache

    @property
    def manifest(self) -> Any:
        """The files of a software run's code manifest (pandas DataFrame; empty for other runs)."""
        return self._frames()[0]

    @property
    def checks(self) -> Any:
        """The checks of a software run's code (pandas DataFrame; empty when none ran)."""
        return self._frames()[1]

    @property
    def files(self) -> dict[str, str]:
        """Path -> content of every file of the manifest (``{}`` for other runs)."""
        manifest = self._load()[0]
        return {f.path: f.content for f in manifest.files} if manifest is not None else {}

    @property
    def verify(self) -> dict[str, Any] | None:
        """``artifacts/verify.json`` (every check with its findings), or None."""
        return self._load()[1]

    @property
    def write_report(self) -> dict[str, Any] | None:
        """What ``--write-files`` did (``{"output", "written", "skipped", "refused"}``), or None."""
        written = self._info().get("written")
        return written if isinstance(written, dict) else None

    def _software_lines(self, md: bool) -> list[str]:
        """The files line and the checks line (and the write line) of a software run; [] otherwise."""
        if not self.is_software:
            return []
        (manifest, verify), info = self._load(), self._info()
        q, b = ("`", "**") if md else ("", "")  # a path in code, a label in bold: in markdown only
        if manifest is None:
            files = "the manifest is unreadable"
        else:
            paths = [f"{q}{f.path.replace('`', '') if md else f.path}{q}" for f in manifest.files]
            files = f"{len(paths)} file{'' if len(paths) == 1 else 's'}"
            files += (": " if paths else "") + ", ".join(paths[:_SHOWN_FILES])
            files += f" and {len(paths) - _SHOWN_FILES} more" if len(paths) > _SHOWN_FILES else ""
        lines = [f"{b}Code{b}: {files}"]
        checks = {n: (str(c.get("status")), len(c.get("findings") or [])) for n, c in self._checks().items()}
        if not checks and isinstance(info.get("checks"), dict):
            checks = {str(n): (str(st), 0) for n, st in info["checks"].items()}
        level = str((verify or {}).get("level") or info.get("level") or "")
        ok = (verify or info).get("ok")
        marks = " · ".join(
            f"{_MARKS.get(st, '?')} {name}" + (f" ({n})" if st == "fail" and n else "")
            for name, (st, n) in checks.items()
        )
        verdict = " — ok" if ok is True else " — a blocking check failed" if ok is False else ""
        lines.append(
            f"{b}Checks{b}{f' ({level})' if level else ''}: {marks or 'none ran'}{verdict if marks else ''}"
        )
        report = self.write_report
        if report is not None:
            counts = " · ".join(f"{len(report.get(k) or [])} {k}" for k in ("written", "skipped", "refused"))
            lines.append(f"{b}Written{b} to {q}{report.get('output') or '?'}{q}: {counts}")
        return lines

    # --- rendering ---------------------------------------------------------------------------------------

    def _body(self) -> str:
        text = self.run.report
        if text.startswith("---\n"):
            end = text.find("\n---\n", 4)
            if end != -1:
                text = text[end + 5 :]
        return text.lstrip("\n")

    def _cite_links(self, cite: Any) -> tuple[str, str] | None:
        """(obsidian URI, file URI) of a citation whose note exists in its vault folder, else None."""
        by_path: dict[str, dict[str, Any]] = {}
        for c in self.citations:
            by_path.setdefault(str(c["path"]).lower(), c)
        single = next(iter(self._roots), None) if len(self._roots) == 1 else None
        found = by_path.get((cite.path + ".md").lower())
        vault = cite.vault or (found or {}).get("vault") or single
        root = self._roots.get(str(vault)) if vault else None
        path = str(found["path"]) if found else cite.path + ".md"
        if (found is not None and not found.get("resolved")) or root is None or not (root / path).is_file():
            return None
        return _link_for(root, path, f"^{cite.block}" if cite.block else cite.heading)

    @property
    def html(self) -> str:
        """The report as HTML: callouts, tables and embeds rendered, each citation with its passage on
        hover or click and the Obsidian link as its second action (``static/report.css``)."""
        from ._report_html import Sources, render_report

        code = "".join(f"- {line}\n" for line in self._software_lines(md=True))
        text = self._banner() + (code + "\n" if code else "") + self._body()
        return render_report(text, Sources(self.run, self._roots, self._cite_links), self.run.id)

    def _linked(self, text: str) -> str:
        """Wikilinks outside code become ``[label](obsidian://...) [↗](file://...)``."""
        links: dict[str, str] = {}
        for cite in extract_citations(text):
            found_links = self._cite_links(cite)
            if found_links is None:
                continue
            uri, file_uri = found_links
            label = cite.alias or cite.raw[2:-2].split("|")[0]
            links[cite.raw] = f"[{_escape_label(label)}](<{uri}>) [↗](<{file_uri}>)"
        if not links:
            return text
        pattern = re.compile("|".join(re.escape(raw) for raw in sorted(links, key=len, reverse=True)))
        pieces, at = [], 0
        for m in _CODE.finditer(text):  # never inside code: a link there is an example, not a citation
            pieces.append(pattern.sub(lambda x: links[x.group(0)], text[at : m.start()]))
            pieces.append(m.group(0))
            at = m.end()
        pieces.append(pattern.sub(lambda x: links[x.group(0)], text[at:]))
        return "".join(pieces)

    def _banner(self) -> str:
        status = self.run.status
        if status in (RunStatus.SUCCESS, RunStatus.RUNNING, RunStatus.PENDING):
            return ""
        reason = self.summary.get("stop_reason") or (
            "a human decision is needed" if status is RunStatus.NEEDS_HUMAN else "some parts did not finish"
        )
        if status is RunStatus.NEEDS_HUMAN:  # the same words as the warning a terminal run gets
            waiting = [
                str(c.get("node_id")) for c in self.summary.get("checkpoints") or [] if not c.get("decision")
            ]
            reason = (
                f"waiting for a decision at {', '.join(waiting)}" if waiting else "waiting for a decision"
            )
            more = f" — decide in its checkpoint widgets or with `%shad checkpoint {self.run.id}`"
        else:
            more = f" — to continue: `%shad resume {self.run.id}`" if status not in _FAILED else ""
        return f"> **⚠ {status.value}**: {reason}{more}\n\n"

    @property
    def markdown(self) -> str:
        """The report without its frontmatter, citations as links."""
        if self._markdown is None:
            code = "".join(f"- {line}\n" for line in self._software_lines(md=True))
            self._markdown = self._banner() + (code + "\n" if code else "") + self._linked(self._body())
        return self._markdown

    def _status_line(self) -> str:
        m = self.summary.get("metrics", {})
        line = f"Shad run {self.run.id}: {self.run.status.value} · {m.get('total_tokens', 0)} tokens · "
        line += f"{m.get('llm_calls', 0)} model calls · provider {self.run.provider_name or '?'}"
        return "\n".join([line, *self._software_lines(md=False)])  # a software run: its files and checks

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None, **kwargs: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        payload = self.to_json()
        data: dict[str, Any] = {MIME: payload}
        if self.format == "json":
            data["application/json"] = payload
            data["text/plain"] = json.dumps(payload, indent=2, ensure_ascii=False, default=str)
        elif self.format == "text":
            data["text/plain"] = f"{self._status_line()}\n\n{self._body()}"
        else:
            data["text/markdown"] = self.markdown
            data["text/html"] = self.html  # what notebooks show; Markdown stays for other front ends
            data["text/plain"] = f"{self._status_line()}\n\n{self._body()}"
        metadata = {MIME: {"run_id": self.run.id, "status": self.run.status.value}}
        return data, metadata

    def _ipython_display_(self) -> None:
        # Shown as a display with an id (not as an execute_result, which cannot be updated): when the run
        # goes on (a checkpoint decided, a resume), this output is replaced in place by its new state.
        from IPython.display import display

        if self._display_id is None:
            self._display_id = f"shad-report-{self.run.id}-{id(self):x}"
        data, metadata = self._repr_mimebundle_()
        display(data, raw=True, metadata=metadata, display_id=self._display_id)  # type: ignore[no-untyped-call]
        if self._view is not None:  # the cell's RunView: its report display now exists to be replaced
            self._view.result = self

    def __repr__(self) -> str:
        return f"<ShadResult {self.run.id} {self.run.status.value}>"


def _warn(message: str) -> None:
    warnings.warn(message, ShadArtifactWarning, stacklevel=4)
