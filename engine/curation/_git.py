"""The ``git`` command as ingestion uses it: resolve what a source is (a folder, a git repository, a git
URL), clone it, read its revision and its tracked files. ``git`` runs as a subprocess, never a shell, with
no terminal prompt (a URL that needs credentials fails instead of waiting for a password)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..config import refuse_offline
from ..errors import ShadError, UsageError

__all__ = ["GitError", "SourceSpec", "clone", "git", "head_revision", "remote_revision", "resolve_source"]

_SCP_LIKE = re.compile(r"^[\w.-]+@([\w.-]+):(.+)$")  # git@github.com:owner/repo.git
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
GIT_TIMEOUT = 600.0


class GitError(ShadError):
    """``git`` failed (a clone, a checkout, a URL it cannot reach)."""


@dataclass(frozen=True)
class SourceSpec:
    """What ``shad ingest`` was pointed at. ``url`` identifies the source (a local path as a ``file://``
    URL, so a repository ingested by path and by URL is one source); ``clone_url`` is what git clones
    (None for a plain folder, read in place)."""

    url: str
    type: str  # "folder" | "git"
    domain: str  # "local" or the URL's host
    name: str  # the repository's or folder's name, before slugging
    local_path: Path | None = None
    clone_url: str | None = None


def _git_binary() -> str:
    binary = shutil.which("git")
    if binary is None:
        raise GitError("git is not installed", hint="install git to ingest repositories (apt install git)")
    return binary


def git(*args: str, cwd: Path | None = None, timeout: float = GIT_TIMEOUT) -> str:
    """Run ``git ARGS`` and return its stdout; a failure is a ``GitError`` with git's own message."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "LC_ALL": "C"}
    try:
        proc = subprocess.run(
            [_git_binary(), *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitError(
            f"git {args[0]} timed out after {timeout:.0f}s", hint="check the URL and network"
        ) from exc
    if proc.returncode != 0:
        detail = " ".join(proc.stderr.strip().splitlines()[-2:]) or f"exit code {proc.returncode}"
        raise GitError(
            f"git {args[0]} failed: {detail}", hint="check the path or URL and that git can reach it"
        )
    return proc.stdout


def _is_bare_repository(path: Path) -> bool:
    if not ((path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()):
        return False
    try:
        return git("rev-parse", "--is-bare-repository", cwd=path).strip() == "true"
    except GitError:
        return False


def _repo_name(path: str) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name[:-4] if name.endswith(".git") else name


def resolve_source(target: str) -> SourceSpec:
    """A folder, a git repository (a folder with ``.git``, or a bare one) or a git URL (``https://``,
    ``ssh://``, ``git://``, ``file://``, ``user@host:path``)."""
    text = target.strip()
    if not text:
        raise UsageError("ingest needs a folder, a git repository or a git URL")
    scp = _SCP_LIKE.match(text)
    if scp and not Path(text).exists():
        url = text[:-4] if text.endswith(".git") else text
        return SourceSpec(url, "git", scp.group(1).lower(), _repo_name(scp.group(2)), clone_url=text)
    if _URL.match(text):
        parsed = urlparse(text)
        if parsed.scheme == "file":
            return _local(Path(unquote(parsed.path)), text)
        if parsed.scheme not in ("http", "https", "ssh", "git"):
            raise UsageError(
                f"cannot ingest a {parsed.scheme}:// URL", hint="give a git URL or a local folder"
            )
        host = (parsed.hostname or "").lower()
        path = parsed.path.rstrip("/")
        if not host or not path.strip("/"):
            raise UsageError(f"not a repository URL: {text!r}", hint="e.g. https://github.com/owner/repo")
        if path.endswith(".git"):
            path = path[:-4]
        # the URL is written into every note: never a password or token (a user name only over ssh)
        where = host + (f":{parsed.port}" if parsed.port else "")
        if parsed.scheme == "ssh" and parsed.username:
            where = f"{parsed.username}@{where}"
        url = f"{parsed.scheme}://{where}{path}"
        return SourceSpec(url, "git", host, _repo_name(path), clone_url=text)
    return _local(Path(text).expanduser(), text)


def _local(path: Path, given: str) -> SourceSpec:
    if not path.exists():
        raise UsageError(f"no such folder, repository or git URL: {given!r}")
    if not path.is_dir():
        raise UsageError(f"{given!r} is a file", hint="ingest takes a folder, a git repository or a git URL")
    root = path.resolve()
    name = root.name or "root"
    if (root / ".git").exists() or _is_bare_repository(root):
        return SourceSpec(root.as_uri(), "git", "local", _repo_name(name), root, clone_url=root.as_uri())
    return SourceSpec(root.as_uri(), "folder", "local", name, root)


def clone(url: str, dest: Path, *, revision: str | None = None) -> str:
    """Clone ``url`` into ``dest`` (shallow unless a ``revision`` must be checked out) and return the
    checked-out commit. Offline mode (``SHAD_OFFLINE``) refuses a repository on another machine."""
    if ("://" in url and not url.startswith("file://")) or re.match(r"^[\w.-]+@[\w.-]+:", url):
        refuse_offline(f"cloning {url}")
    if revision is None:
        git("clone", "--quiet", "--depth", "1", "--", url, str(dest))
    else:
        git("clone", "--quiet", "--no-checkout", "--", url, str(dest))
        try:
            git("checkout", "--quiet", "--detach", revision, cwd=dest)
        except GitError as exc:
            raise GitError(
                f"revision {revision} is not in {url}",
                hint="pin a commit the repository has (shad sources pin)",
            ) from exc
    return head_revision(dest)


def head_revision(repo: Path) -> str:
    return git("rev-parse", "HEAD", cwd=repo).strip()


def tracked_files(repo: Path) -> list[str]:
    """The files git tracks at the checked-out commit (POSIX paths, sorted)."""
    out = git("ls-files", "-z", cwd=repo)
    return sorted(p for p in out.split("\0") if p)


def remote_revision(url: str) -> str:
    """The commit ``url``'s HEAD points at now, without cloning."""
    out = git("ls-remote", "--", url, "HEAD")
    line = out.strip().splitlines()[0] if out.strip() else ""
    if not line:
        raise GitError(f"{url} has no HEAD", hint="is it an empty repository?")
    return line.split()[0]
