"""``shad vault ...``: index, status, search, note and links for one or more vaults."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..config import remote_scheme
from ..errors import UsageError
from ..vault import Hit, Vault, VaultSet
from ._term import show

__all__ = ["vault_group"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


vault_option = click.option(
    "--vault",
    "vaults",
    multiple=True,
    required=True,
    metavar="DIR",
    help="Vault folder, or mcp:COMMAND / mcp:URL of an MCP server; repeat for layered vaults.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


@contextmanager
def _progress(label: str, enabled: bool) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal; a no-op callback otherwise."""
    if not enabled or not err.is_terminal:
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total or None)

        yield update


def _open(paths: tuple[str, ...], show_progress: bool = True) -> VaultSet:
    """The vaults named: folders, or ``mcp:COMMAND`` / ``mcp:URL`` read through an MCP server."""
    vaults = VaultSet(list(paths))  # a SCHEME:... vault opens through its backend
    for v in vaults:
        if not isinstance(v, Vault):
            continue  # the server keeps its own index
        if v.index.is_empty():
            with _progress(f"indexing {v.id}", show_progress) as update:
                v.refresh(update)
        else:
            v.refresh()
        if not v.list_notes():
            raise UsageError(
                f"vault {v.id!r} has no notes: {v.root}",
                hint="point --vault at a folder that contains .md files",
            )
    return vaults


def check_backends(ctx: click.Context, param: click.Parameter, specs: tuple[str, ...]) -> tuple[str, ...]:
    """``--backend`` values must name a backend: ``mcp:COMMAND`` or ``mcp:URL``."""
    for spec in specs:
        if remote_scheme(spec) is None:
            raise UsageError(
                f"--backend {spec!r} names no backend", hint="e.g. --backend 'mcp:shad mcp serve --vault DIR'"
            )
    return specs


@click.group("vault")
def vault_group() -> None:
    """Read, index and search Obsidian vaults."""


@vault_group.command("index")
@vault_option
@click.option(
    "--embeddings/--no-embeddings",
    "embeddings",
    default=None,
    help="Also rank notes by meaning (the 'embeddings' extra: a local MiniLM model; every note is embedded "
    "once, then what changes) / stop doing so and delete the vectors. Default: as the vault was.",
)
@json_option
def index_cmd(vaults: tuple[str, ...], embeddings: bool | None, as_json: bool) -> None:
    """Build or update the search index (only changed notes are re-read)."""
    results = []
    for path in vaults:
        v = Vault(path)
        if embeddings is False:
            v.drop_embeddings()
        with _progress(f"indexing {v.id}", not as_json) as update:
            stats = v.refresh(update)
        if not v.list_notes():
            raise UsageError(
                f"vault {v.id!r} has no notes: {v.root}",
                hint="point --vault at a folder that contains .md files",
            )
        embedded = 0
        if embeddings:
            with _progress(f"embedding {v.id}", not as_json) as update:
                embedded = v.embed(update)
        semantic = v.embeddings_status()
        results.append(
            {
                "vault": v.id,
                "root": str(v.root),
                "index": str(v.index.db_path),
                "scanned": stats.scanned,
                "added": stats.added,
                "updated": stats.updated,
                "removed": stats.removed,
                "unchanged": stats.unchanged + stats.touched,
                "attachments": stats.attachments,
                "seconds": round(stats.seconds, 3),
                "embeddings": semantic["model"] if semantic else None,
                "embedded": embedded,
            }
        )
    if as_json:
        _print_json(results if len(results) > 1 else results[0])
        return
    for r in results:
        out.print(
            f"[bold]{escape(str(r['vault']))}[/]: {r['scanned']} files scanned, {r['added']} added, "
            f"{r['updated']} updated, {r['removed']} removed, {r['unchanged']} unchanged "
            f"in {r['seconds']:.2f}s [dim]({escape(str(r['index']))})[/]"
        )
        if r["embeddings"]:
            out.print(
                f"  semantic ranking on ({escape(str(r['embeddings']))}): {r['embedded']} notes embedded"
            )


@vault_group.command("status")
@vault_option
@json_option
def status_cmd(vaults: tuple[str, ...], as_json: bool) -> None:
    """Notes, links, problems and sync conflicts of each vault."""
    statuses = [v.status() for v in _open(vaults, not as_json)]
    if as_json:
        _print_json(statuses[0] if len(statuses) == 1 else statuses)
        return
    for s in statuses:
        if s.get("backend") == "mcp":  # a vault read through an MCP server: what the server tells
            out.print(f"[bold]{escape(s['vault'])}[/] [dim]mcp: {escape(str(s['source']))}[/]")
            out.print(f"  {s['notes']} notes, served by {escape(str(s['server']))}")
            continue
        out.print(f"[bold]{escape(s['vault'])}[/] [dim]{escape(s['root'])}[/]")
        out.print(
            f"  {s['notes']} notes, {s['attachments']} attachments, {s['links']} links "
            f"({s['unresolved_links']} unresolved, {s['ambiguous_links']} ambiguous), {s['tags']} tags"
        )
        if s.get("embeddings"):
            e = s["embeddings"]
            waiting = f", {e['stale']} waiting (shad vault index --embeddings)" if e["stale"] else ""
            out.print(f"  semantic ranking: {e['notes']} notes embedded with {escape(e['model'])}{waiting}")
        if s["diagnostics"]:
            out.print("  diagnostics: " + ", ".join(f"{k} {n}" for k, n in s["diagnostics"].items()))
        for p in s["problems"][:20]:
            out.print(f"  [yellow]{escape(p['code'])}[/] {escape(p['path'])}: {escape(p['message'])}")
        if len(s["problems"]) > 20:
            out.print(f"  … and {len(s['problems']) - 20} more (use --json for all)")
        for c in s["conflicts"]:
            original = f" (copy of {c['original']})" if c["original"] else ""
            out.print(f"  [red]sync conflict[/] {escape(c['path'])}{escape(original)}")
        for sk in s["skipped"]:
            out.print(f"  [yellow]skipped[/] {escape(sk['path'])}: {escape(sk['reason'])}")


def _parse_where(items: tuple[str, ...]) -> dict[str, Any] | None:
    where: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--where takes FIELD=VALUE, got {item!r}")
        where.setdefault(key.strip(), []).extend(_scalar_forms(value.strip()))
    return where or None


def _scalar_forms(value: str) -> list[Any]:
    """The text as typed plus the number or boolean it spells: frontmatter ``rating: 5`` is a number."""
    forms: list[Any] = [value]
    if value.lower() in ("true", "false"):
        forms.append(value.lower() == "true")
        return forms
    for convert in (int, float):
        try:
            forms.append(convert(value))
            break
        except ValueError:
            continue
    return forms


@vault_group.command("search")
@click.argument("query")
@vault_option
@click.option(
    "--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 1000), help="Hits to show."
)
@click.option("--path", help="Only notes under this folder (or this note path).")
@click.option("--type", "note_type", help="Only notes whose frontmatter `type` is this.")
@click.option("--tag", "tags", multiple=True, help="Only notes with this tag (repeat: all must match).")
@click.option(
    "--where", "where", multiple=True, metavar="FIELD=VALUE", help="Frontmatter field equals value."
)
@click.option("--after", help="Only notes modified on or after this ISO date.")
@click.option("--before", help="Only notes modified on or before this ISO date.")
@click.option(
    "--semantic/--no-semantic",
    default=True,
    show_default=True,
    help="In a vault indexed with --embeddings, also rank by meaning / rank by text alone.",
)
@json_option
def search_cmd(
    query: str,
    vaults: tuple[str, ...],
    limit: int,
    path: str | None,
    note_type: str | None,
    tags: tuple[str, ...],
    where: tuple[str, ...],
    after: str | None,
    before: str | None,
    semantic: bool,
    as_json: bool,
) -> None:
    """Ranked full-text search: plain questions work; "quoted phrases", prefix* and -excluded words too."""
    vs = _open(vaults, not as_json)
    hits = vs.search(
        query,
        limit=limit,
        path=path,
        type=note_type,
        tags=list(tags) or None,
        where=_parse_where(where),
        modified_after=after,
        modified_before=before,
        **_text_only(semantic),
    )
    if as_json:
        _print_json([h.to_dict() for h in hits])
        return
    if not hits:
        err.print(
            f"no notes match {query!r}"
            + (" with these filters" if any([path, note_type, tags, where]) else "")
        )
    else:
        _print_hits(hits, show_vault=len(vs) > 1)
    # A hit that holds none of the words typed is explained: the vault never uses the word, its synonyms
    # were searched too.
    for word, others in vs.searched_synonyms(query).items():
        also = escape(", ".join(others))
        err.print(f"[dim]no note holds {escape(repr(word))}: also searched for {also}[/]")


def _text_only(semantic: bool) -> dict[str, Any]:
    """The switch to pass only when it is off: a vault served over MCP knows no such argument."""
    return {} if semantic else {"semantic": False}


def _print_hits(hits: list[Hit], show_vault: bool) -> None:
    for i, h in enumerate(hits, 1):
        where = f"{h.vault}:" if show_vault else ""
        heading = f" [cyan]› {escape(h.heading)}[/]" if h.heading else ""
        out.print(f"[bold]{i:>2}. {escape(where + h.path)}[/]{heading} [dim]{h.score:.2f}[/]")
        if h.snippet:
            out.print(f"    {escape(h.snippet)}")


@vault_group.command("note")
@click.argument("path")
@vault_option
@json_option
def note_cmd(path: str, vaults: tuple[str, ...], as_json: bool) -> None:
    """Show one note: frontmatter, headings, links (resolved), backlinks, tags, diagnostics.

    PATH is vault-relative (the .md may be left off), or the note's name or alias as a wikilink names it.
    """
    vs = _open(vaults, not as_json)
    note = vs.read_note(path)
    owner = vs.get(note.vault or vs.ids[0])
    backlinks = owner.backlinks(note.path)
    if as_json:
        _print_json({**note.to_dict(), "backlinks": backlinks})
        return
    out.print(f"[bold]{escape(note.path)}[/] [dim]({escape(note.vault or '')}, {note.size} bytes)[/]")
    if note.frontmatter:
        table = Table(show_header=False, box=None, padding=(0, 1))
        for k, v in note.frontmatter.items():
            table.add_row(f"[cyan]{escape(k)}[/]", escape(json.dumps(v, ensure_ascii=False, default=str)))
        show(out, table)
    if note.tags:
        out.print("tags: " + ", ".join(f"#{escape(t)}" for t in note.tags))
    if note.headings:
        out.print("headings:")
        for h in note.headings:
            out.print(f"  {'  ' * (h.level - 1)}{escape(h.text)} [dim]L{h.line}[/]")
    if note.links:
        out.print("links:")
        for link in note.links:
            target = link.resolved or "[red]unresolved[/]"
            sub = f"#{link.heading}" if link.heading else f"#^{link.block}" if link.block else ""
            extra = " [yellow](ambiguous)[/]" if link.ambiguous else ""
            out.print(
                f"  {'!' if link.embed else ''}[[{escape(link.target + sub)}]] → {target}{extra} "
                f"[dim]L{link.line}[/]"
                if link.line
                else f"  {escape(link.field or '')}: [[{escape(link.target + sub)}]] → {target}{extra}"
            )
    if backlinks:
        out.print("backlinks: " + ", ".join(escape(b) for b in backlinks))
    for d in note.diagnostics:
        out.print(f"[yellow]{escape(d.code)}[/]: {escape(d.message)}")


@vault_group.command("links")
@click.argument("path")
@vault_option
@click.option("--depth", default=1, show_default=True, type=click.IntRange(1, 10), help="Hops for neighbors.")
@json_option
def links_cmd(path: str, vaults: tuple[str, ...], depth: int, as_json: bool) -> None:
    """Outgoing links, backlinks and neighbors (within --depth hops) of a note (a path or a name)."""
    vs = _open(vaults, not as_json)
    note = vs.read_note(path)
    v = vs.get(note.vault or vs.ids[0])
    data = {
        "vault": v.id,
        "path": note.path,
        "outgoing": sorted(
            {link.resolved for link in note.links if link.resolved and link.resolved != note.path}
        ),
        "unresolved": sorted({link.target for link in note.links if not link.resolved}),
        "backlinks": v.backlinks(note.path),
        "neighbors": v.neighbors(note.path, depth),
    }
    if as_json:
        _print_json(data)
        return
    for key in ("outgoing", "unresolved", "backlinks", "neighbors"):
        label = f"{key} (depth {depth})" if key == "neighbors" else key
        out.print(f"[bold]{label}[/]: " + (", ".join(escape(x) for x in data[key]) or "[dim]none[/]"))


@vault_group.command("analyze")
@click.option(
    "--vault", "vault", required=True, metavar="DIR", help="The vault whose recorded runs to analyse."
)
@click.option(
    "--llm-audit",
    is_flag=True,
    help="Also ask a model to audit each topic (needs a key; without a model its weight is redistributed).",
)
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 1000), help="Topics to show.")
@click.option("--no-write", is_flag=True, help="Do not write the report note into the vault.")
@json_option
def analyze_cmd(vault: str, llm_audit: bool, top: int, no_write: bool, as_json: bool) -> None:
    """Gap analysis: rank the topics the vault's recorded runs struggled with (gap = 0.55 history pain
    + 0.25 coverage miss + 0.20 model audit) with evidence and suggested additions, and write the
    report note Shad/Reports/Vault analysis <date>.md."""
    from ..curation import analyze_vault, write_gap_report

    report = analyze_vault(vault, llm_audit=llm_audit, top=top)
    if report.runs_analyzed and not no_write:
        write_gap_report(report)
    if as_json:
        _print_json(report.to_dict())
        return
    if not report.runs_analyzed:
        out.print(escape(report.message))
        return
    out.print(
        f"[bold]{escape(report.vault_id)}[/]: {report.runs_analyzed} run(s), {report.topics_total} topic(s); "
        f"model audit: {escape(report.audit)}"
    )
    table = Table()
    table.add_column("#", justify="right")
    table.add_column("topic")
    for name in ("gap", "pain", "coverage", "audit", "runs", "queries"):
        table.add_column(name, justify="right")
    for i, t in enumerate(report.topics, 1):
        table.add_row(
            str(i),
            escape(t.topic),
            f"{t.gap_score:.2f}",
            f"{t.history_pain:.2f}",
            f"{t.coverage_miss:.2f}",
            "—" if t.audit is None else f"{t.audit:.2f}",
            str(len(t.runs)),
            str(t.asks),
        )
    show(out, table)
    for i, t in enumerate(report.topics, 1):
        out.print(f"[bold]{i}. {escape(t.topic)}[/] [dim]({t.priority} priority)[/]")
        for line in _evidence(t.runs, t.queries, t.signals):
            out.print(f"   {escape(line)}")
        for suggestion in t.suggestions:
            out.print(f"   [green]+[/] {escape(suggestion)}")
    out.print(f"[dim]weights: {escape(report.weights_note)}[/]")
    if report.report_path:
        out.print(f"report note: {escape(str(Path(report.vault) / report.report_path))}")
    else:
        out.print("[dim]no report note written (--no-write)[/]")


def _evidence(runs: list[str], queries: list[str], signals: dict[str, Any]) -> list[str]:
    shown = ", ".join(runs[:4]) + (f" (+{len(runs) - 4} more)" if len(runs) > 4 else "")
    asked = "; ".join(f"“{q}”" for q in queries[:3]) + (
        f" (+{len(queries) - 3} more)" if len(queries) > 3 else ""
    )
    found = [f"runs: {shown}", f"asked: {asked}"]
    median = signals.get("median_retrieval_score")
    parts = [f"median retrieval {median:.2f}"] if median is not None else []
    for key, label in (
        ("low_score", "low"),
        ("fallback", "fallback"),
        ("trouble", "failed/checkpointed"),
        ("nothing_found", "nothing found"),
        ("repeated", "asked again"),
    ):
        if signals.get(key):
            parts.append(f"{label} {signals[key]:.0%}")
    parts.append(
        f"{signals.get('asks_supported', 0)}/{signals.get('asks_checked', 0)} asks supported by a note"
    )
    if signals.get("pruned_redundant"):  # a saving, not trouble: said apart
        saved = signals.get("tokens_saved_est", 0)
        parts.append(f"{signals['pruned_redundant']} pruned as redundant (~{saved} tokens saved)")
    return [*found, ", ".join(parts)]
