"""``ShadMagics``: ``%%shad run`` (the cell is the goal) and the ``%shad`` line magics, with session
defaults as traitlets (``%shad config key=value`` or ``c.ShadMagics.key`` in an IPython profile)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool, CaselessStrEnum, List, TraitError, Unicode, default

import engine
from engine import Run, RunStatus, ShadError

from . import _launch, _lines
from ._args import (
    CHECKPOINT_POLICIES,
    FORMATS,
    RUN_HELP,
    interpolate,
    parse_config_pairs,
    parse_run,
    parse_subcommand,
    split_line,
)
from ._cell import RunView
from ._checkpoints import (
    CheckpointList,
    CheckpointPanel,
    engine_policy,
    listing,
    needs_human_error,
    resolve_policy,
)
from ._context import build_context
from ._errors import ShadRunCancelled, ShadUsageError, short_traceback
from ._result import ShadResult
from ._runner import Job, RunHandle, check_outcome, wait

__all__ = ["CHECKPOINT_POLICIES", "ShadMagics"]


class _PathList(List):  # type: ignore[type-arg]
    """A list of folders; a single string is a list of one (``%shad config vault=DIR``)."""

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, (str, os.PathLike)):
            value = [str(value)]
        return super().validate(obj, value)


@magics_class
class ShadMagics(Magics):
    """``%%shad run [options]`` runs the cell's goal over the vault(s); ``%shad status|trace|resume|
    checkpoint|export|runs|search|analyze|config|providers`` look at runs and vaults, and ``%shad
    ingest|sources|approvals|learnings`` curate them; ``skills`` lists skills. Errors always raise."""

    vault = _PathList(
        Unicode(),
        help="Default vault folder(s) for %%shad run and %shad search, in priority order "
        "(else $SHAD_VAULT, several separated by os.pathsep).",
    ).tag(config=True)
    provider = Unicode(
        None,
        allow_none=True,
        help="Default provider: anthropic, openai, claude-code, offline or replay "
        "(None: the engine's default, offline when no key is set).",
    ).tag(config=True)
    history_dir = Unicode(
        None, allow_none=True, help="Where run history goes (None: <first vault>/Shad/History/Runs)."
    ).tag(config=True)
    strategy = Unicode(None, allow_none=True, help="Default strategy (None: classified per goal).").tag(
        config=True
    )
    checkpoints = CaselessStrEnum(
        CHECKPOINT_POLICIES,
        help="What a run does when it needs a human: pause (the cell ends showing checkpoint widgets; a "
        "click resumes the run), fail (raise ShadRunError naming the node: nothing waits for a click), "
        "approve or skip (decided by themselves), off (open none), or auto (the default: pause where a "
        "person can click, fail in headless runs such as papermill and nbclient). $SHAD_CHECKPOINTS sets "
        "the default (the terminal's ask counts as auto here).",
    ).tag(config=True)
    widget = Bool(True, help="Show the live DAG explorer while a run works (--no-widget turns it off).").tag(
        config=True
    )
    format = CaselessStrEnum(FORMATS, default_value="markdown", help="How results render by default.").tag(
        config=True
    )

    @default("checkpoints")
    def _default_checkpoints(self) -> str:
        value = os.environ.get("SHAD_CHECKPOINTS", "auto").strip().lower()
        return value if value in CHECKPOINT_POLICIES else "auto"

    # --- the magic -------------------------------------------------------------------------------------

    @line_cell_magic  # type: ignore[untyped-decorator, unused-ignore]
    def shad(self, line: str, cell: str | None = None) -> Any:
        """``%%shad run [options]`` + a goal, or ``%shad SUBCOMMAND ...``; ``%%shad run --help`` lists
        the run options."""
        try:
            if cell is not None:
                words = split_line(line)
                if not words or words[0] != "run":
                    raise ShadUsageError(
                        "the cell magic is %%shad run", hint="%%shad run [options] + the goal"
                    )
                return self._run(line, cell)
            sub, ns = parse_subcommand(line)
            return getattr(self, f"_sub_{sub}")(ns)
        except ShadError as exc:
            short_traceback(exc)  # one line and a hint: the engine's frames would bury them (%tb has all)
            raise

    # --- %%shad run ------------------------------------------------------------------------------------

    def _run(self, line: str, cell: str) -> Any:
        args = parse_run(line)
        if args.help:
            print(RUN_HELP)
            return None
        namespace = self.shell.user_ns if self.shell is not None else {}
        goal = interpolate(cell.strip(), args.vars, namespace)
        if not goal.strip():
            raise ShadUsageError(
                "the cell is empty: its body is the goal", hint="write what you want below %%shad run"
            )
        vaults = args.vaults or _launch.default_vaults(self)
        policy = resolve_policy(args.checkpoints or self.checkpoints, self.shell)
        options = self._session_options() | args.options | {"checkpoints": engine_policy(policy)}
        ctx = build_context([self._context_item(token, namespace) for token in args.context])
        try:
            config = _launch.config_for(goal, vaults, options, ctx.dirs)
        except BaseException:
            ctx.cleanup()
            raise
        widget = self._show_widget(args.widget)
        view = self._view()
        panel = self._panel(widget, policy, args.format, args.output, args.background, view)
        job = _launch.start(
            _launch.run_launcher(config),
            widget=widget,
            config=config,
            context=ctx,
            on_event=view.sink(args.background),
            on_done=_on_done(view, panel, args.background),
        )
        return self._deliver(job, widget, args.format, args.output, args.background, policy, panel, view)

    def _session_options(self) -> dict[str, Any]:
        names = ("provider", "history_dir", "strategy")
        return {n: getattr(self, n) for n in names if getattr(self, n)}

    @staticmethod
    def _context_item(token: str, namespace: dict[str, Any]) -> tuple[str, Any]:
        if token.isidentifier() and token in namespace:
            return token, namespace[token]
        path = Path(token).expanduser()
        if path.exists():
            return (path.stem or path.name), path
        raise ShadUsageError(
            f"--context {token}: no notebook variable or file of that name",
            hint="pass a DataFrame or string variable, or the path of a file or folder",
        )

    def _show_widget(self, wanted: bool) -> Any:
        widget = _launch.make_widget(self.widget and wanted)
        if widget is not None:
            self._display(widget)
        return widget

    def _view(self) -> RunView:
        """The cell's progress line (shown now, below the DAG widget); none in a terminal."""
        view = RunView(enabled=type(self.shell).__name__ != "TerminalInteractiveShell")
        view.show()
        return view

    def _display(self, obj: Any) -> None:
        # A terminal cannot show a widget at all; everywhere else (a kernel, even a headless one, or an
        # embedded shell) displaying it is harmless and nothing waits for it.
        if type(self.shell).__name__ != "TerminalInteractiveShell":
            from IPython.display import display

            display(obj)  # type: ignore[no-untyped-call]

    def _panel(
        self,
        widget: Any,
        policy: str,
        fmt: str | None,
        output: str | None,
        background: bool,
        view: RunView | None = None,
    ) -> CheckpointPanel | None:
        """Where this cell's checkpoint widgets go under ``pause`` (None otherwise). A background run
        shows its (empty until needed) box now: once the cell has ended, nothing else could."""
        if policy != "pause" or type(self.shell).__name__ == "TerminalInteractiveShell":
            return None
        shell = self.shell

        def bind(result: ShadResult) -> None:  # -o NAME follows the run through its resumes
            if output and not background and shell is not None:
                shell.user_ns[output] = result

        panel = CheckpointPanel(widget, format=fmt or self.format, bind=bind, view=view)
        if background:
            self._display(panel.box)
        return panel

    def _deliver(
        self,
        job: Job,
        widget: Any,
        fmt: str | None,
        output: str | None,
        background: bool,
        policy: str,
        panel: CheckpointPanel | None,
        view: RunView,
    ) -> Any:
        fmt = fmt or self.format

        def finish(run: Run) -> ShadResult:
            result = ShadResult(run, format=fmt, widget=widget)
            if output and not background and self.shell is not None:
                self.shell.user_ns[output] = result  # bound even when the run failed, to look into it
            view.finish(result)  # the line says how it ended; earlier displays of this run follow
            if run.status == RunStatus.NEEDS_HUMAN:
                if policy == "fail":
                    raise needs_human_error(run)
                if panel is not None:
                    result.checkpoints = panel
                    if not background:  # (a background run's box is shown already, filled on the way)
                        panel.show(run.id)
                        self._display(panel.box)  # below the DAG widget, above the result
            check_outcome(run, person_here=panel is not None)
            return result

        if background:
            handle = RunHandle(job, finish, widget)
            if output and self.shell is not None:
                self.shell.user_ns[output] = handle
            return handle
        try:
            run = wait(job, tick=view.tick)
        except ShadRunCancelled as exc:
            view.cancelled(exc.status)
            _launch.show_stopped(widget, exc.run_id)
            raise
        return finish(run)

    # --- %shad subcommands -----------------------------------------------------------------------------

    def _sub_status(self, ns: Any) -> Any:
        return _lines.status(ns.run_id)

    def _sub_trace(self, ns: Any) -> Any:
        return _lines.trace(ns.run_id, ns.node)

    def _sub_export(self, ns: Any) -> Any:
        return _lines.export(ns.run_id, ns.dir, ns.overwrite)

    def _sub_runs(self, ns: Any) -> Any:
        return _lines.runs(ns.limit)

    def _sub_search(self, ns: Any) -> Any:
        vaults = ns.vault or _launch.default_vaults(self)
        return _lines.search(" ".join(ns.query), vaults, ns.limit)

    def _sub_analyze(self, ns: Any) -> Any:
        if ns.run_id:
            return _lines.analyze(ns.run_id)
        from ._analyze_lines import gap_analysis  # the vault's gap analysis (engine.curation)

        vaults, write = ns.vault or _launch.default_vaults(self), not ns.no_write
        return gap_analysis(
            vaults,
            llm_audit=ns.llm_audit,
            write=write,
            top=ns.top,
            provider=self.provider,
            display=self._display,
        )

    def _sub_providers(self, ns: Any) -> Any:
        return _lines.providers()

    def _sub_approvals(self, ns: Any) -> Any:
        from . import _curation_lines

        terminal = type(self.shell).__name__ == "TerminalInteractiveShell"  # no widget can show there
        return _curation_lines.approvals(ns, None if terminal else self._display)

    def _sub_learnings(self, ns: Any) -> Any:
        from . import _curation_lines

        return _curation_lines.learnings(ns.vault or _launch.default_vaults(self)[0], ns.status)

    def _sub_skills(self, ns: Any) -> Any:
        from . import _skills_lines

        return _skills_lines.skills(ns.vault or _launch.default_vaults(self), ns.name, ns.goal)

    def _sub_ingest(self, ns: Any) -> Any:
        """Without --yes, a usage error that says what would be written (the confirmation)."""
        from . import _ingest_lines

        vault = ns.vault or _launch.default_vaults(self)[0]
        return _ingest_lines.ingest_source(ns.source, vault, preset=ns.preset, yes=ns.yes, domain=ns.domain)

    def _sub_sources(self, ns: Any) -> Any:
        """``%shad sources [SOURCE_ID]``: the shadow index as a DataFrame (or one source's snapshots)."""
        from . import _ingest_lines

        return _ingest_lines.sources(ns.source_id)

    def _sub_resume(self, ns: Any) -> Any:
        from ._args import extra_tokens

        previous = Run.load(ns.run_id)
        base = previous.config.budgets.max_tokens if previous.config is not None else 0
        if ns.budget and ns.max_tokens is not None:
            raise ShadUsageError("give --budget or --max-tokens, not both")
        kwargs: dict[str, Any] = {"add_tokens": extra_tokens(base, ns.budget)}
        for name in ("max_tokens", "max_depth", "replay"):  # only when given: older engines lack them
            if getattr(ns, name) is not None:
                kwargs[name] = getattr(ns, name)
        hint = _lines.check_resume_hint(previous, ns.hint)  # refused here, also under --background
        if hint:
            kwargs["hint"] = hint
        return self._resume(previous, kwargs, ns)

    def _resume(self, previous: Run, kwargs: dict[str, Any], ns: Any) -> Any:
        """Continue ``previous`` as ``%shad resume`` does: blocking (or --background), with the DAG
        widget, under the session's (or --checkpoints) policy for checkpoints still undecided."""
        run_id = previous.id
        policy = resolve_policy(ns.checkpoints or self.checkpoints, self.shell)
        kwargs = {**kwargs, "checkpoints": engine_policy(policy)}

        def launch(sink: Any) -> Any:
            return engine.aresume(run_id, on_event=sink, **kwargs)

        widget = self._show_widget(not ns.no_widget)
        view = self._view()
        panel = self._panel(widget, policy, ns.format, ns.output, ns.background, view)
        job = _launch.start(
            launch,
            widget=widget,
            config=previous.config,
            on_event=view.sink(ns.background),
            on_done=_on_done(view, panel, ns.background),
        )
        return self._deliver(job, widget, ns.format, ns.output, ns.background, policy, panel, view)

    def _sub_checkpoint(self, ns: Any) -> Any:
        """No decision: the pending checkpoints (a table, and their widgets). A decision: record it and,
        once nothing of the run is left undecided, resume it like ``%shad resume``."""
        run = Run.load(ns.run_id)
        if ns.action is None:
            pending = engine.pending_checkpoints(run.id)
            if ns.node is not None:
                waiting = ", ".join(c.node_id for c in pending) or "none"
                pending = [c for c in pending if c.node_id == ns.node]
                if not pending:
                    raise ShadUsageError(
                        f"node {ns.node!r} of run {run.id} waits for no decision", hint=f"pending: {waiting}"
                    )
            return self._list_checkpoints(run.id, pending, ns)
        decided = engine.decide(run.id, ns.node, ns.action, ns.text)
        remaining = engine.pending_checkpoints(run.id)
        if remaining:
            info = self._list_checkpoints(run.id, remaining, ns)
            head = f"recorded `{ns.action}` for `{decided.node_id}`; the run resumes once these are decided:"
            return CheckpointList(f"{head}\n\n{info.markdown}", info.data, info.panel)
        return self._resume(run, {}, ns)

    def _list_checkpoints(self, run_id: str, pending: list[engine.Checkpoint], ns: Any) -> CheckpointList:
        panel = None
        if pending and type(self.shell).__name__ != "TerminalInteractiveShell":
            panel = CheckpointPanel(
                make_dag=self.widget and not ns.no_widget, format=ns.format or self.format
            )
            panel.show(run_id, pending)
            self._display(panel.box)
        return listing(run_id, pending, panel)

    def _sub_config(self, ns: Any) -> Any:
        traits = self.traits(config=True)
        changes = _lines.config_changes(traits, parse_config_pairs(ns.pairs))
        before = {key: getattr(self, key) for key in changes}
        for key, (text, value) in changes.items():
            try:
                setattr(self, key, value)
            except TraitError as exc:
                for name, old in before.items():  # all or nothing: a bad pair changes no setting
                    setattr(self, name, old)
                raise ShadUsageError(
                    f"bad value for {key}: {text!r}", hint=f"{key} takes {traits[key].info()}"
                ) from exc
        current = {name: getattr(self, name) for name in sorted(traits)}
        text = "\n".join(f"- `{k}` = `{v!r}`" for k, v in current.items())
        return _lines.Info(text, current)


def _on_done(view: RunView, panel: CheckpointPanel | None, background: bool) -> Any:
    """A background run's line says how it ended as soon as it does; its checkpoints show (under pause)."""
    if not background:
        return None
    pause = _pause_in(panel, background)

    def done(job: Job) -> None:
        view.ended(job)
        if pause is not None:
            pause(job)

    return done


def _pause_in(panel: CheckpointPanel | None, background: bool) -> Any:
    """A job's ``on_done`` for a background run under pause: its checkpoints appear in the panel (on
    the engine thread, by setting traits). A blocking cell shows them itself when the run ends."""
    if panel is None or not background:
        return None

    def done(job: Job) -> None:
        run = job.run
        if run is not None and run.status == RunStatus.NEEDS_HUMAN:
            panel.show(run.id)

    return done
