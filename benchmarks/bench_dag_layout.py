"""The DAG explorer's layout (``widgets/static/dag_explorer.js``, run in node): milliseconds per
``bestLayout`` call for runs of 10, 30, 50 and 200 nodes (a root, subtasks, their parts), and the scale at
which each fits a 1000 x 600 px box. The front end lays the DAG out again on every throttled update, so
this is the cost of one redraw's layout.

    python benchmarks/bench_dag_layout.py [--repeat 200]

Prints one JSON object. Needs ``node``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "widgets" / "static" / "dag_explorer.js"
SHAPES = {10: [3, 3, 0], 30: [5, 5, 5, 5, 4], 50: [5] * 8 + [0], 200: [6] * 28 + [3]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="Layouts per size (default 200).")
    args = parser.parse_args()
    if shutil.which("node") is None:
        sys.exit("bench_dag_layout: node is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        module = Path(tmp) / "dag_explorer.mjs"
        shutil.copy(SCRIPT, module)
        js = f"""
          import {{ bestLayout }} from {str(module.as_uri())!r};
          const shapes = {json.dumps(SHAPES)};
          const out = {{}};
          for (const [size, fan] of Object.entries(shapes)) {{
            const nodes = [{{ id: "root", parent: null, status: "SUCCEEDED" }}];
            fan.forEach((parts, i) => {{
              nodes.push({{ id: `t${{i}}`, parent: "root", status: "SUCCEEDED" }});
              for (let j = 0; j < parts; j++) nodes.push({{ id: `t${{i}}.p${{j}}`, parent: `t${{i}}` }});
            }});
            const times = [];
            let lay = null;
            for (let r = 0; r < {args.repeat}; r++) {{
              const t = performance.now();
              lay = bestLayout(nodes, {{}}, 1000, 600);
              times.push(performance.now() - t);
            }}
            times.sort((a, b) => a - b);
            out[size] = {{
              nodes: nodes.length,
              median_ms: +times[times.length >> 1].toFixed(3),
              p95_ms: +times[Math.floor(times.length * 0.95)].toFixed(3),
              width: Math.round(lay.width), height: Math.round(lay.height),
              fit_scale: +Math.min(1, 1000 / lay.width, 600 / lay.height).toFixed(3),
            }};
          }}
          console.log(JSON.stringify(out));
        """
        done = subprocess.run(
            ["node", "--input-type=module", "-e", js], capture_output=True, text=True, timeout=600
        )
    if done.returncode != 0:
        sys.exit(f"bench_dag_layout: node failed: {done.stderr.strip()}")
    print(json.dumps({"bench": "dag_layout", "box": [1000, 600], "sizes": json.loads(done.stdout)}))


if __name__ == "__main__":
    main()
