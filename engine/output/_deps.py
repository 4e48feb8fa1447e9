"""Declared dependencies as importable top-level names: ``PyYAML>=6`` -> ``yaml``.

The import check accepts a third-party import only when the project declares it; the declaration names a
distribution, the import a module, so a small table covers the well-known mismatches and everything else
is lowercased with ``-``/``.`` turned into ``_`` (comparisons are case-insensitive).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["npm_dependencies", "parse_pyproject", "parse_requirements", "python_dependencies", "top_level"]

_KNOWN: dict[str, tuple[str, ...]] = {
    "pyyaml": ("yaml",), "beautifulsoup4": ("bs4",), "pillow": ("PIL",), "scikit_learn": ("sklearn",),
    "scikit_image": ("skimage",), "python_dateutil": ("dateutil",), "opencv_python": ("cv2",),
    "opencv_python_headless": ("cv2",), "opencv_contrib_python": ("cv2",), "attrs": ("attr", "attrs"),
    "protobuf": ("google",), "python_dotenv": ("dotenv",), "pyzmq": ("zmq",), "pyjwt": ("jwt",),
    "psycopg2_binary": ("psycopg2",), "psycopg_binary": ("psycopg",), "faiss_cpu": ("faiss",),
    "faiss_gpu": ("faiss",), "python_multipart": ("multipart", "python_multipart"), "pyserial": ("serial",),
    "pycryptodome": ("Crypto",), "pycryptodomex": ("Cryptodome",), "pymupdf": ("fitz",),
    "setuptools": ("setuptools", "pkg_resources"), "msgpack_python": ("msgpack",),
    "python_docx": ("docx",), "python_pptx": ("pptx",), "grpcio": ("grpc",), "ruamel_yaml": ("ruamel",),
    "pywin32": ("win32api", "win32con", "pywintypes"), "dnspython": ("dns",), "pyopenssl": ("OpenSSL",),
    "markdown_it_py": ("markdown_it",), "import_linter": ("importlinter",), "ipython": ("IPython",),
    "types_pyyaml": (), "pandas_stubs": (),
}  # fmt: skip
_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def top_level(requirement: str) -> tuple[str, ...]:
    """The importable top-level names a requirement string (``name[extra]>=1; marker``) provides."""
    match = _NAME.match(requirement)
    if not match:
        return ()
    name = match.group(1)
    key = re.sub(r"[-.]+", "_", name).lower()
    if key in _KNOWN:
        return _KNOWN[key]
    if key.startswith("types_") or key.endswith("_stubs"):
        return ()  # stub packages provide no runtime module
    if key.startswith("google_"):
        return ("google",)
    return (key,)


def python_dependencies(requirements: Iterable[str]) -> list[str]:
    """Sorted, unique importable names for requirement strings."""
    return sorted({name for req in requirements for name in top_level(req)})


def parse_requirements(text: str) -> list[str]:
    """Requirement strings of a ``requirements.txt``: options (``-r``, ``-e``, ``--index-url``), comments
    and URLs are left out."""
    found = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")) or "://" in line.split("@", 1)[0]:
            continue
        found.append(line)
    return found


def parse_pyproject(text: str) -> list[str]:
    """Requirement strings a ``pyproject.toml`` declares: PEP 621 dependencies and optional dependencies,
    PEP 735 dependency groups, Poetry's tables and the build requirements (``setup.py`` imports them).
    An unparsable file declares nothing."""
    data = _load_toml(text)
    if data is None:
        return []
    reqs: list[str] = []
    project = _table(data.get("project"))
    reqs += _str_list(project.get("dependencies"))
    reqs += _str_list(_table(data.get("build-system")).get("requires"))
    for extra in _table(project.get("optional-dependencies")).values():
        reqs += _str_list(extra)
    for group in _table(data.get("dependency-groups")).values():
        reqs += _str_list(group)
    poetry = _table(_table(data.get("tool")).get("poetry"))
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    tables += [_table(g).get("dependencies") for g in _table(poetry.get("group")).values()]
    for table in tables:
        reqs += [name for name in _table(table) if name.lower() != "python"]
    return reqs


def npm_dependencies(text: str) -> set[str]:
    """Package names a ``package.json`` declares (all four dependency tables, and its own name: a package
    may import itself by name); bad JSON declares none."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return set()
    names: set[str] = set()
    if isinstance(data, dict):
        for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
            names |= set(_table(data.get(key)))
        if isinstance(data.get("name"), str):
            names.add(data["name"])
    return names


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str_list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _load_toml(text: str) -> dict[str, Any] | None:
    """``tomllib`` (3.11+) or ``tomli`` when present; else a reader of just the dependency arrays."""
    for name in ("tomllib", "tomli"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        try:
            data = module.loads(text)
        except (module.TOMLDecodeError, UnicodeError):
            return None
        return data if isinstance(data, dict) else None
    return _toml_fallback(text)


def _toml_fallback(text: str) -> dict[str, Any]:
    """Python 3.10 without tomli: the quoted strings of the PEP 621 / PEP 735 dependency arrays only."""
    wanted = {"project.optional-dependencies", "dependency-groups"}
    named = {("project", "dependencies"), ("build-system", "requires")}
    reqs: list[str] = []
    section = ""
    pattern = r"^\[([^\]\n]+)\][ \t]*$|^[ \t]*([\w.\"-]+)[ \t]*=[ \t]*\[(.*?)\]"
    for match in re.finditer(pattern, text, re.M | re.S):
        if match.group(1) is not None:
            section = match.group(1).strip()
        elif section in wanted or (section, match.group(2)) in named:
            reqs += [a or b for a, b in re.findall(r"\"([^\"]*)\"|'([^']*)'", match.group(3))]
    return {"project": {"dependencies": reqs}}
