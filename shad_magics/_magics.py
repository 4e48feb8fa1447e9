"""``ShadMagics``: ``%%shad run`` (the cell is the goal) and the ``%shad`` line magics, with session
defaults as traitlets (``%shad config key=value`` or ``c.ShadMagics.key`` in an IPython profile)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool, CaselessStrEnum, List, TraitError, Unicode, default

import engine
from engine import Run, ShadError

from . import _launch, _lines
from ._args import FORMATS, RUN_HELP, interpolate, parse_config_pairs, parse_run, parse_subcommand, split_line
from ._context import build_context
from ._errors import ShadUsageError, short_traceback
from ._result import ShadResult
from ._runner import Job, RunHandle, check_outcome, wait

__all__ = ["CHECKPOINT_POLICIES", "ShadMagics"]

CHECKPOINT_POLICIES = ("fail", "approve", "skip", "pause")


class _PathList(List):  # type: ignore[type-arg]
    """A list of folders; a single string is a list of one (``%shad config vault=DIR``)."""

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, (str, os.PathLike)):
            value = [str(value)]
        return super().validate(obj, value)


@magics_class
class ShadMagics(Magics):
    """``%%shad run [options]`` runs the cell's goal over the vault(s); ``%shad status|trace|resume|
    export|runs|search|analyze|config|providers`` look at runs and vaults. Errors always raise."""

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
        help="What a run does when it needs a human: fail (the default, and what headless runs such as "
        "papermill must use: nothing ever waits for a click), approve, skip, or pause (interactive only). "
        "Stored for the checkpoint widgets; $SHAD_CHECKPOINTS sets the default.",
    ).tag(config=True)
    widget = Bool(True, help="Show the live DAG explorer while a run works (--no-widget turns it off).").tag(
        config=True
    )
    format = CaselessStrEnum(FORMATS, default_value="markdown", help="How results render by default.").tag(
        config=True
    )

    @default("checkpoints")
    def _default_checkpoints(self) -> str:
        value = os.environ.get("SHAD_CHECKPOINTS", "fail").strip().lower()
        return value if value in CHECKPOINT_POLICIES else "fail"

    # --- the magic -------------------------------------------------------------------------------------

    @line_cell_magic  # type: ignore[untyped-decorator]
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
        options = self._session_options() | args.options
        ctx = build_context([self._context_item(token, namespace) for token in args.context])
        try:
            config = _launch.config_for(goal, vaults, options, ctx.dirs)
        except BaseException:
            ctx.cleanup()
            raise
        widget = self._show_widget(args.widget)
        job = _launch.start(_launch.run_launcher(config), widget=widget, config=config, context=ctx)
        return self._deliver(job, widget, args.format, args.output, args.background)

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
        # A terminal cannot show a widget at all; everywhere else (a kernel, even a headless one, or an
        # embedded shell) displaying it is harmless and nothing waits for it.
        if widget is not None and type(self.shell).__name__ != "TerminalInteractiveShell":
            from IPython.display import display

            display(widget)  # type: ignore[no-untyped-call]
        return widget

    def _deliver(self, job: Job, widget: Any, fmt: str | None, output: str | None, background: bool) -> Any:
        fmt = fmt or self.format

        def finish(run: Run) -> ShadResult:
            result = ShadResult(run, format=fmt, widget=widget)
            if output and not background and self.shell is not None:
                self.shell.user_ns[output] = result  # bound even when the run failed, to look into it
            check_outcome(run)
            return result

        if background:
            handle = RunHandle(job, finish, widget)
            if output and self.shell is not None:
                self.shell.user_ns[output] = handle
            return handle
        return finish(wait(job))

    # --- %shad subcommands -----------------------------------------------------------------------------

    def _sub_status(self, ns: Any) -> Any:
        return _lines.status(ns.run_id)

    def _sub_trace(self, ns: Any) -> Any:
        return _lines.trace(ns.run_id, ns.node)

    def _sub_export(self, ns: Any) -> Any:
        return _lines.export(ns.run_id, ns.dir)

    def _sub_runs(self, ns: Any) -> Any:
        return _lines.runs(ns.limit)

    def _sub_search(self, ns: Any) -> Any:
        vaults = ns.vault or _launch.default_vaults(self)
        return _lines.search(" ".join(ns.query), vaults, ns.limit)

    def _sub_analyze(self, ns: Any) -> Any:
        return _lines.analyze(ns.run_id)

    def _sub_providers(self, ns: Any) -> Any:
        return _lines.providers()

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
        run_id = previous.id

        def launch(sink: Any) -> Any:
            return engine.aresume(run_id, on_event=sink, **kwargs)

        widget = self._show_widget(not ns.no_widget)
        job = _launch.start(launch, widget=widget, config=previous.config)
        return self._deliver(job, widget, ns.format, ns.output, ns.background)

    def _sub_config(self, ns: Any) -> Any:
        traits = self.traits(config=True)
        vaults: list[str] = []
        changes: dict[str, Any] = {}
        for key, value in parse_config_pairs(ns.pairs):
            if key not in traits:
                raise ShadUsageError(
                    f"unknown setting {key!r}", hint=f"settings: {', '.join(sorted(traits))}"
                )
            if key == "vault":
                path = Path(value).expanduser()
                if not path.is_dir():
                    raise ShadUsageError(
                        f"vault folder not found: {path}", hint="give the folder of your notes"
                    )
                vaults.append(str(path.resolve()))
                continue
            try:
                changes[key] = (value, traits[key].from_string(value))
            except (TraitError, ValueError) as exc:
                raise ShadUsageError(
                    f"bad value for {key}: {value!r}", hint=f"{key} takes {traits[key].info()}"
                ) from exc
        if vaults:
            changes["vault"] = (" ".join(vaults), vaults)
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
