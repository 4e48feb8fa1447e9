"""The explorer's layout code (``widgets/static/dag_explorer.js``) run in node: rows by dependency level,
wide rows folded, wide fans collapsed into a "+N more" box (and folded back by "− fewer"), and runs of 30
and 50 nodes that fit a notebook-sized box legibly with no two boxes overlapping."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import widgets

STATIC = Path(widgets.__file__).parent / "static"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def run_layout(tmp_path: Path, nodes: list[dict[str, Any]], call: str) -> Any:
    """``call`` (JS, with ``nodes`` and the module's exports in scope) evaluated in node; its JSON."""
    module = tmp_path / "dag_explorer.mjs"
    shutil.copy(STATIC / "dag_explorer.js", module)
    script = f"""
      import * as dag from {str(module.as_uri())!r};
      const {{ layout, bestLayout, levels, BOX_W, BOX_H, KEEP }} = dag;
      const nodes = {json.dumps(nodes)};
      const out = (() => {{ {call} }})();
      console.log(JSON.stringify(out, (k, v) => v instanceof Map ? Object.fromEntries(v)
        : v instanceof Set ? [...v] : v));
    """
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def tree(fan: list[int]) -> list[dict[str, Any]]:
    """A root with one subtask per entry of ``fan``, each split into that many parts."""
    nodes: list[dict[str, Any]] = [{"id": "root", "parent": None, "status": "SUCCEEDED"}]
    for i, parts in enumerate(fan):
        nodes.append({"id": f"t{i}", "parent": "root", "status": "SUCCEEDED"})
        nodes += [{"id": f"t{i}.p{j}", "parent": f"t{i}", "status": "SUCCEEDED"} for j in range(parts)]
    return nodes


def overlaps(items: list[dict[str, Any]], w: float, h: float) -> list[tuple[str, str]]:
    return [
        (a["id"], b["id"])
        for a, b in itertools.combinations(items, 2)
        if abs(a["x"] - b["x"]) < w and abs(a["y"] - b["y"]) < h
    ]


def test_dependencies_push_a_node_below_what_it_depends_on(tmp_path: Path) -> None:
    nodes = [
        {"id": "root", "parent": None},
        {"id": "a", "parent": "root"},
        {"id": "b", "parent": "root", "hard_deps": ["a"]},
        {"id": "c", "parent": "root", "soft_deps": ["b"]},
        {"id": "d", "parent": "root"},
        {"id": "loop1", "parent": "root", "hard_deps": ["loop2"]},
        {"id": "loop2", "parent": "root", "hard_deps": ["loop1"]},  # the engine refuses cycles; no hang
    ]
    level = run_layout(tmp_path, nodes, "return levels(nodes);")
    assert level["root"] == 0 and level["a"] == level["d"] == 1
    assert level["b"] == 2 and level["c"] == 3
    assert level["loop1"] >= 1 and level["loop2"] >= 1
    lay = run_layout(tmp_path, nodes[:5], "return layout(nodes, {perRow: 8});")
    ys = {k: v["y"] for k, v in lay["pos"].items()}
    assert ys["root"] < ys["a"] == ys["d"] < ys["b"] < ys["c"]


def test_a_30_node_run_stacks_each_parents_parts_under_it(tmp_path: Path) -> None:
    nodes = tree([5, 5, 5, 5, 4])
    assert len(nodes) == 30
    out = run_layout(
        tmp_path, nodes, "const l = bestLayout(nodes, {}, 1000, 600); return {...l, box: [BOX_W, BOX_H]};"
    )
    w, h = out["box"]
    assert len(out["items"]) == 30 and not out["alias"]  # every node drawn, none collapsed
    assert overlaps(out["items"], w, h) == []
    scale = min(1, 1000 / out["width"], 600 / out["height"])
    assert scale >= 0.9, (out["width"], out["height"])
    pos = out["pos"]
    for i in range(5):  # each subtask's parts hang in a column just right of it, top to bottom
        parts = [pos[f"t{i}.p{j}"] for j in range(4)]
        assert all(p["x"] > pos[f"t{i}"]["x"] for p in parts)
        assert len({p["x"] for p in parts}) == 1
        assert [p["y"] for p in parts] == sorted(p["y"] for p in parts)
    assert set(out["stacked"]) == {n["id"] for n in nodes if "." in n["id"]}


def test_a_50_node_run_fits_a_notebook_box_legibly(tmp_path: Path) -> None:
    nodes = tree([5, 5, 5, 5, 5, 5, 5, 5, 0])  # 9 subtasks: their row wraps, their parts cannot stack
    assert len(nodes) == 50
    out = run_layout(
        tmp_path, nodes, "const l = bestLayout(nodes, {}, 1000, 600); return {...l, box: [BOX_W, BOX_H]};"
    )
    w, h = out["box"]
    assert len(out["items"]) == 50
    assert overlaps(out["items"], w, h) == []
    assert min(1, 1000 / out["width"], 600 / out["height"]) >= 0.7
    assert all(
        i["x"] >= 0 and i["x"] + w <= out["width"] and i["y"] + h <= out["height"] for i in out["items"]
    )


def test_a_wide_fan_collapses_and_expands(tmp_path: Path) -> None:
    nodes: list[dict[str, Any]] = [{"id": "root", "parent": None, "status": "STARTED"}]
    nodes += [{"id": f"n{i}", "parent": "root", "status": "SUCCEEDED"} for i in range(40)]
    nodes[30]["status"] = "FAILED"  # n29: never hidden
    out = run_layout(tmp_path, nodes, "return {l: layout(nodes, {perRow: 8, selected: 'n33'}), KEEP};")
    lay, keep = out["l"], out["KEEP"]
    groups = [i for i in lay["items"] if i["kind"] == "group"]
    assert len(groups) == 1
    shown = [i["id"] for i in lay["items"] if i["kind"] == "node" and i["id"] != "root"]
    assert shown == [f"n{i}" for i in range(keep)] + ["n29", "n33"]
    assert len(groups[0]["hidden"]) == 40 - len(shown)
    assert lay["alias"]["n20"] == groups[0]["id"] and lay["pos"]["n20"] == lay["pos"][groups[0]["id"]]
    key = groups[0]["key"]
    opened = run_layout(
        tmp_path, nodes, f"return layout(nodes, {{perRow: 8, expanded: new Set([{key!r}])}});"
    )
    assert len([i for i in opened["items"] if i["kind"] == "node"]) == 41 and not opened["alias"]
    assert overlaps(opened["items"], 176, 58) == []


def test_an_expanded_fan_collapses_again(tmp_path: Path) -> None:
    nodes: list[dict[str, Any]] = [{"id": "root", "parent": None, "status": "STARTED"}]
    nodes += [{"id": f"n{i}", "parent": "root", "status": "SUCCEEDED"} for i in range(40)]
    nodes[30]["status"] = "FAILED"
    # What the widget does: "+N more" adds its key to `expanded`, "− fewer" deletes the key it carries.
    out = run_layout(
        tmp_path,
        nodes,
        """
        const expanded = new Set(), opts = {perRow: 8, selected: 'n33', expanded};
        const before = layout(nodes, opts);
        expanded.add(before.items.find((i) => i.kind === 'group').key);
        const opened = layout(nodes, opts);
        const fewer = opened.items.filter((i) => i.kind === 'fewer');
        for (const f of fewer) expanded.delete(f.key);
        return {before, opened, fewer, after: layout(nodes, opts)};
        """,
    )
    group = next(i for i in out["before"]["items"] if i["kind"] == "group")
    assert not [i for i in out["before"]["items"] if i["kind"] == "fewer"]  # nothing to fold yet
    assert [i for i in out["opened"]["items"] if i["kind"] == "group"] == []
    assert [(f["key"], f["parent"], f["hides"]) for f in out["fewer"]] == [
        (group["key"], "root", len(group["hidden"]))
    ]
    assert out["opened"]["items"][-1]["kind"] == "fewer"  # after the group's last subtask
    assert overlaps(out["opened"]["items"], 176, 58) == []
    assert out["after"] == out["before"]  # back to the collapsed layout, active/selected nodes still shown
    shown = {i["id"] for i in out["after"]["items"]}
    assert {"n29", "n33"} <= shown and "n20" not in shown
