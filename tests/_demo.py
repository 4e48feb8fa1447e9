"""A pristine copy of the demo vault for the tests.

The real ``example_notebooks/vault`` may hold run history in ``Shad/`` (the README's first command
writes it there), so tests read a copy made once per test process, without that folder.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "example_notebooks" / "vault"


def _pristine_copy() -> Path:
    root = Path(tempfile.mkdtemp(prefix="shad-demo-")) / "vault"
    shutil.copytree(
        SOURCE, root, symlinks=True, ignore=lambda folder, names: ["Shad"] if Path(folder) == SOURCE else []
    )
    atexit.register(shutil.rmtree, root.parent, True)
    return root


DEMO = _pristine_copy()


def write_vault(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``{relative path: text or bytes}`` under ``root`` (folders made as needed); return ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root
