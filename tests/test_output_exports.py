"""Pass 1 (the export index) and post-generation import validation, on small Python packages (src and
flat layouts) and TypeScript projects, with planted faults and clean code."""

from __future__ import annotations

from engine.output import Manifest, ManifestFile, build_export_index, validate_imports


def _manifest(files: dict[str, str], dependencies: list[str] | None = None) -> Manifest:
    return Manifest(
        files=[ManifestFile.make(p, c) for p, c in files.items()], dependencies=dependencies or []
    )


SRC = {
    "pyproject.toml": '[project]\nname = "shop"\ndependencies = ["requests>=2"]\n',
    "src/shop/__init__.py": (
        '"""Shop."""\nfrom .models import User\nfrom .factory import make_user\n'
        '__all__ = ["User", "make_user", "models"]\n'
    ),
    "src/shop/models.py": (
        "from __future__ import annotations\nimport os\nfrom dataclasses import dataclass\n\n"
        "@dataclass\nclass User:\n    name: str\n\n"
        "def helper() -> None: ...\n\nasync def fetch() -> None: ...\n\n"
        "_private = 1\nLIMIT, RETRIES = 3, 4\ntimeout: float = 1.5\n"
    ),
    "src/shop/factory.py": (
        "from typing import TYPE_CHECKING\nfrom .models import User\n\n"
        "if TYPE_CHECKING:\n    from shop.api.handlers import Handler\n\n"
        "def make_user(name: str) -> User:\n    return User(name)\n"
    ),
    "src/shop/api/__init__.py": "",
    "src/shop/api/handlers.py": (
        "import json\nimport os.path\nfrom collections import abc\nimport requests\nimport yaml\n"
        "from .. import models\nfrom ..models import User, helper\nfrom . import handlers as again\n"
        "from shop import make_user\nfrom shop.api import handlers\nimport shop.api.handlers\n"
        "try:\n    import ujson as fastjson\nexcept ImportError:\n    import simplejson as fastjson\n\n"
        "class Handler:\n    def load(self) -> User:\n        from shop.factory import make_user as mk\n"
        "        return mk(json.dumps({}))\n"
    ),
    "tests/test_models.py": "import pytest\nfrom shop.models import User\n\ndef test_user():\n    User()\n",
    "README.md": "# Shop\n",
}


def test_export_index_of_a_src_layout_package() -> None:
    index = build_export_index(_manifest(SRC))
    assert index.modules["shop"] == "src/shop/__init__.py"
    assert index.modules["shop.models"] == "src/shop/models.py"
    assert index.modules["shop.api.handlers"] == "src/shop/api/handlers.py"
    assert index.modules["src.shop.models"] == "src/shop/models.py"  # the dotted path is kept as an alias
    assert index.modules["test_models"] == "tests/test_models.py"
    models = {e["symbol"]: e["type"] for e in index.exports if e["from"] == "src/shop/models.py"}
    # public top-level names only; `os` and `dataclass` are imports of a plain module, not its exports
    assert models == {
        "User": "class",
        "helper": "function",
        "fetch": "function",
        "LIMIT": "variable",
        "RETRIES": "variable",
        "timeout": "variable",
    }
    package = [e for e in index.exports if e["from"] == "src/shop/__init__.py"]
    # __all__ decides, and a re-export takes the kind it has where it is defined
    assert package == [
        {"symbol": "User", "from": "src/shop/__init__.py", "type": "class"},
        {"symbol": "make_user", "from": "src/shop/__init__.py", "type": "function"},
        {"symbol": "models", "from": "src/shop/__init__.py", "type": "module"},
    ]
    assert {"User", "make_user"} <= index.exporters("shop")
    assert {"_private", "os", "dataclass", "User"} <= index.exporters("shop.models")  # all bound names
    assert index.exporters("nope") == set()
    assert set(index.to_dict()) == {"exports", "path_aliases"}
    assert index.to_dict()["path_aliases"] == {}


def test_export_index_of_a_flat_package_with_star_reexports() -> None:
    index = build_export_index(
        _manifest(
            {
                "geo/__init__.py": "from .shapes import *\nfrom .units import *\n",
                "geo/shapes.py": "__all__ = ['Circle']\nclass Circle: ...\nclass Hidden: ...\n",
                "geo/units.py": "METRE = 1\n_INTERNAL = 2\ndef convert(): ...\n",
                "geo/broken.py": "def oops(:\n",
            }
        )
    )
    assert index.modules["geo"] == "geo/__init__.py" and index.modules["geo.shapes"] == "geo/shapes.py"
    geo = {e["symbol"]: e["type"] for e in index.exports if e["from"] == "geo/__init__.py"}
    assert geo == {"Circle": "class", "METRE": "variable", "convert": "function"}
    assert [e["symbol"] for e in index.exports if e["from"] == "geo/shapes.py"] == ["Circle"]
    assert not any(e["from"] == "geo/broken.py" for e in index.exports)  # does not parse: left out
    assert index.modules["geo.broken"] == "geo/broken.py"  # but the module exists


def test_export_index_of_typescript() -> None:
    index = build_export_index(
        _manifest(
            {
                "tsconfig.json": (
                    "{\n  // JSONC: comments and trailing commas\n"
                    '  "compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"],}}\n}'
                ),
                "src/types.ts": (
                    "export interface User { id: string }\nexport type Role = 'a' | 'b';\n"
                    "export enum Color { Red }\nexport const LIMIT = 3;\n/* export const GONE = 1; */\n"
                    "export async function createUser(): Promise<User> { return {id: ''}; }\n"
                    "export default class Store {}\nconst a = 1, b = 2;\nexport { a, b as bee };\n"
                ),
                "src/index.ts": "export * from './types';\nexport * as api from './api/users';\n",
                "src/api/users.ts": "export function listUsers() {}\n",
            }
        )
    )
    assert index.path_aliases == {"@/": "src/"}
    types = {e["symbol"]: e["type"] for e in index.exports if e["from"] == "src/types.ts"}
    assert types == {
        "User": "type",
        "Role": "type",
        "Color": "variable",
        "LIMIT": "variable",
        "createUser": "function",
        "default": "class",
        "a": "variable",
        "bee": "variable",
    }
    assert index.modules["src/types"] == "src/types.ts"
    assert index.modules["src"] == "src/index.ts"
    assert index.exporters("src/index") == {"User", "Role", "Color", "LIMIT", "createUser", "a", "bee", "api"}


def test_a_clean_package_has_no_findings() -> None:
    report = validate_imports(_manifest(SRC, dependencies=["PyYAML", "pytest"]))
    assert report.to_dict() == {"missing_modules": [], "missing_symbols": []}
    assert report.findings == []


def test_planted_faults_are_found_with_their_lines() -> None:
    files = dict(SRC)
    files["src/shop/service.py"] = (
        "import os\n"
        "import notapkg.sub\n"  # 2: not in the manifest, not stdlib, not declared
        "from shop.models import User, Missing\n"  # 3: a symbol no file exports
        "from .nothere import thing\n"  # 4: a bad relative import
        "from .... import too_far\n"  # 5: climbs above the top-level package
        "import shop.nomod\n"  # 6: the package exists, the module does not
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from shop.models import AlsoMissing\n"  # 9: type-checking imports count
    )
    report = validate_imports(_manifest(files, dependencies=["PyYAML", "pytest"]))
    assert report.missing_modules == [
        {
            "file": "src/shop/service.py",
            "import": "notapkg.sub",
            "reason": "not in the manifest, the standard library or the declared dependencies",
        },
        {
            "file": "src/shop/service.py",
            "import": ".nothere",
            "reason": "it resolves to shop.nothere, which is not in the manifest",
        },
        {
            "file": "src/shop/service.py",
            "import": "....",
            "reason": "relative import climbs above the top-level package",
        },
        {
            "file": "src/shop/service.py",
            "import": "shop.nomod",
            "reason": "the manifest has the package shop but no module shop.nomod",
        },
    ]
    assert report.missing_symbols == [
        {
            "file": "src/shop/service.py",
            "symbol": "Missing",
            "module": "shop.models",
            "reason": "not defined in src/shop/models.py",
        },
        {
            "file": "src/shop/service.py",
            "symbol": "AlsoMissing",
            "module": "shop.models",
            "reason": "not defined in src/shop/models.py",
        },
    ]
    assert sorted((f.line, f.check) for f in report.findings) == [
        (line, "imports") for line in (2, 3, 4, 5, 6, 9)
    ]
    assert all(f.path == "src/shop/service.py" for f in report.findings)
    assert all(set(f.to_dict()) == {"path", "line", "message", "check"} for f in report.findings)


def test_undeclared_third_party_import_is_missing_until_declared() -> None:
    files = {"app/__init__.py": "", "app/main.py": "import yaml\nimport requests\n"}
    report = validate_imports(_manifest(files))
    assert [m["import"] for m in report.missing_modules] == ["yaml", "requests"]
    files["requirements.txt"] = "PyYAML>=6\n"
    report = validate_imports(_manifest(files, dependencies=["requests"]))
    assert report.missing_modules == []


def test_a_module_with_getattr_or_a_foreign_star_import_provides_any_name() -> None:
    files = {
        "lazy/__init__.py": "def __getattr__(name):\n    return name\n",
        "wide.py": "from os.path import *\n",
        "use.py": "from lazy import anything\nfrom wide import join, whatever\n",
    }
    assert validate_imports(_manifest(files)).findings == []


def test_files_that_do_not_parse_are_left_to_the_syntax_check() -> None:
    files = {"pkg/__init__.py": "", "pkg/bad.py": "import nothing_here\ndef f(:\n"}
    assert validate_imports(_manifest(files)).findings == []


TS = {
    "package.json": '{"name": "web", "dependencies": {"react": "^18", "@tanstack/query": "5"},'
    ' "devDependencies": {"@types/node": "20"}}',
    "tsconfig.json": '{"compilerOptions": {"paths": {"@/*": ["./src/*"]}}}',
    "src/types.ts": "export interface User { id: string }\nexport default function main() {}\n",
    "src/db/index.ts": "export const db = {};\n",
    "src/api/users.ts": (
        "import { User } from '@/types';\nimport main from '../types.js';\nimport { db } from '../db';\n"
        "import React, { useState } from 'react';\nimport { useQuery } from '@tanstack/query/react';\n"
        "import { readFile } from 'node:fs/promises';\nimport path from 'path';\n"
        "import type { User as U } from './../types';\nexport { db } from '../db/index';\n"
        "const cfg = require('./config.json');\n"
    ),
    "src/api/config.json": "{}",
}


def test_clean_typescript_has_no_findings() -> None:
    report = validate_imports(_manifest(TS))
    assert report.findings == []


def test_typescript_faults() -> None:
    files = dict(TS)
    files["src/api/bad.ts"] = (
        "import { Nope, User } from '../types';\n"  # 1: a symbol the file does not export
        "import pad from 'left-pad';\n"  # 2: not declared in package.json
        "import './missing';\n"  # 3: no such file
        "import { x } from '@/gone';\n"  # 4: an alias to no file
        "import y from '../../../outside';\n"  # 5: climbs out of the root
        "// import z from 'commented-out';\n"
    )
    report = validate_imports(_manifest(files))
    assert report.missing_symbols == [
        {
            "file": "src/api/bad.ts",
            "symbol": "Nope",
            "module": "../types",
            "reason": "not exported by src/types.ts",
        }
    ]
    assert [(m["import"], m["reason"]) for m in report.missing_modules] == [
        ("left-pad", "not declared in package.json (and not a Node built-in)"),
        ("@/gone", "no file of the manifest matches this path"),
        ("../../../outside", "the path climbs out of the project root"),
        ("./missing", "no file of the manifest matches this path"),
    ]
    assert sorted(f.line for f in report.findings) == [1, 2, 3, 4, 5]


def test_typescript_modules_that_may_export_anything_and_a_wildcard_paths_fallback() -> None:
    files = {
        "tsconfig.json": (
            '{"compilerOptions": {"paths": {"*": ["types/*"], "~/*": ["./src/*"], "cfg": ["src/c.ts"]}}}'
        ),
        "package.json": '{"name": "web", "dependencies": {"lodash": "4"}}',
        "src/c.ts": "export const c = 1;\n",
        "src/legacy.js": "module.exports = { a: 1 };\n",
        "src/barrel.ts": "export * from 'lodash';\n",
        "src/vendor.d.ts": "declare module 'untyped-thing';\n",
        "src/a.ts": (
            "import { c } from 'cfg';\nimport { c as d } from '~/c';\nimport { a } from './legacy';\n"
            "import { chunk } from './barrel';\nimport u from 'untyped-thing';\nimport web from 'web/sub';\n"
        ),
    }
    index = build_export_index(_manifest(files))
    assert index.path_aliases == {"~/": "src/", "cfg": "src/c.ts"}  # "*" is a fallback, not an alias
    assert "*" in index.exporters("src/legacy") and "*" in index.exporters("src/barrel")
    assert validate_imports(_manifest(files), index).findings == []
