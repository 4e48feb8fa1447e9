"""``shad ingest`` and ``shad enrich``: bring a source into the vault as a snapshot, index its symbols.

Only click is imported here: ``shad ingest --help`` must stay instant; the engine loads when a command
runs. Ingesting is a hard-safety checkpoint: on a terminal it asks, elsewhere it needs ``--yes``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

__all__ = ["PRESETS", "enrich_cmd", "ingest_cmd"]

PRESETS = ("mirror", "docs", "deep")  # engine.curation.INGEST_PRESETS (a test keeps them in step)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _interactive() -> bool:
    """A person can answer a question here (the question goes to stderr: --json output stays clean)."""
    return sys.stdin.isatty()


@click.command("ingest")
@click.argument("source", metavar="PATH_OR_URL")
@click.option("--vault", required=True, metavar="DIR", help="The vault the snapshot is written into.")
@click.option(
    "--preset",
    type=click.Choice(PRESETS),
    default="docs",
    show_default=True,
    help="mirror: every text file; docs: documentation only; deep: docs + code + a symbol index.",
)
@click.option(
    "--domain", metavar="NAME", help="The folder under Sources/ (default: the URL's host, or local)."
)
@click.option("-y", "--yes", is_flag=True, help="Write without asking (needed when not on a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
def ingest_cmd(source: str, vault: str, preset: str, domain: str | None, yes: bool, as_json: bool) -> int:
    """Bring a folder, git repository or git URL into the vault as an immutable, provenance-stamped snapshot.

    PATH_OR_URL is a local folder, a local git repository (its HEAD commit is the revision) or a git URL
    (https://, ssh://, git@host:path, file://; cloned with --depth 1). The snapshot is written under
    Sources/<domain>/<source_id>/<YYYY-MM-DD>/ with an index note _snapshot.md; every note carries
    source_url, source_type, ingested_at, source_revision, content_hash, snapshot_id and source_path.
    Binary files, files over 1 MB, hidden and vendored folders are skipped (and listed). Ingesting a
    revision the latest snapshot already holds writes nothing. The source is recorded in the shadow
    index (shad sources ls).
    """
    from ..curation import IngestPlan, ingest

    def ask(plan: IngestPlan) -> bool:
        return click.confirm(f"Ingest {plan.describe()}?", default=False, err=True)

    confirm = ask if not yes and _interactive() else None
    result = ingest(source, vault, preset=preset, domain=domain, yes=yes, confirm=confirm)
    if as_json:
        _echo_json(result.to_dict())
        return 0
    click.echo(result.message)
    if not result.unchanged:
        click.echo(f"snapshot index: {result.path}/_snapshot.md ({len(result.notes)} notes written)")
        if result.symbols is not None:
            click.echo(str(result.symbols["message"]))
    for skipped in result.skipped[:20]:
        click.echo(f"  skipped {skipped.path}: {skipped.reason}")
    if len(result.skipped) > 20:
        click.echo(f"  ... and {len(result.skipped) - 20} more skipped (--json lists them all)")
    return 0


@click.command("enrich")
@click.argument("snapshot_id")
@click.option("--deep", is_flag=True, help="Index every class, function and method, not only the modules.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
def enrich_cmd(snapshot_id: str, deep: bool, as_json: bool) -> int:
    """Add a symbol and module index to an ingested snapshot.

    Writes _symbols/<module>.md per code module and _symbols/index.md inside the snapshot's folder, each
    linking to the code notes. Python is read with ast; other languages with tree-sitter when it and the
    language's grammar are installed (pip install 'shad[symbols]'), else they are listed as skipped. The
    snapshot's own notes are never changed. SNAPSHOT_ID is listed by shad sources ls.
    """
    from ..curation import enrich

    result = enrich(snapshot_id, deep=deep)
    if as_json:
        _echo_json(result.to_dict())
        return 0
    click.echo(result.message)
    click.echo(f"index: {result.path}/_symbols/index.md")
    for skipped in result.skipped:
        click.echo(f"  skipped {skipped.path}: {skipped.reason}")
    return 0
