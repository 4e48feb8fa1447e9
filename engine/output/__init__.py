"""Code manifests (O1), the export index and import validation (O3), and the safe writer (O6).

A software run ends in a ``Manifest``: files with their language, hash and the nodes and vault notes they
came from. ``build_export_index`` is pass 1 of contracts-first generation, ``validate_imports`` checks
what pass 2 wrote against it, ``check_integrity`` refuses paths that could escape or collide, and
``write_manifest`` writes under ``--output`` and nowhere else. ``manifest_from_dir`` turns a user's own
project into a manifest so the same checks run on it.
"""

from __future__ import annotations

from ._exports import ExportIndex, build_export_index
from ._fromdir import manifest_from_dir
from ._imports import ImportReport, validate_imports
from ._integrity import Finding, check_integrity
from ._manifest import Manifest, ManifestFile, ManifestNote, language_of
from ._writer import WriteReport, write_manifest

__all__ = [
    "ExportIndex",
    "Finding",
    "ImportReport",
    "Manifest",
    "ManifestFile",
    "ManifestNote",
    "WriteReport",
    "build_export_index",
    "check_integrity",
    "language_of",
    "manifest_from_dir",
    "validate_imports",
    "write_manifest",
]
