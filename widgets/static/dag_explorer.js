// Shad's DAG explorer: the run's DAG laid out by depth (SVG), a budget strip, and a details panel for
// the clicked node. Plain ES module for anywidget: no imports, nothing fetched, all text set through
// textContent (tasks, notes and answers come from the vault and the model, never trusted as HTML).

const SVG = "http://www.w3.org/2000/svg";
const BOX_W = 184;
const BOX_H = 56;
const GAP_X = 18;
const GAP_Y = 46;
const PAD = 14;
const STATUSES = ["CREATED", "STARTED", "SUCCEEDED", "CACHE_HIT", "FAILED", "PRUNED", "NEEDS_HUMAN"];

function h(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function s(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

function clip(text, n) {
  const t = String(text || "").replace(/\s+/g, " ").trim();
  return t.length <= n ? t : t.slice(0, n - 1) + "…";
}

function num(x) {
  return typeof x === "number" && isFinite(x) ? x.toLocaleString("en-US") : "–";
}

function seconds(ms) {
  return typeof ms === "number" && ms > 0 ? (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s" : "–";
}

// A software node's check status as the graph shows it: ✓ pass, ✗ fail (with its findings), – skipped.
const CHECK_MARKS = { pass: "✓", fail: "✗", skip: "–" };

function checkMark(code) {
  if (!code || !CHECK_MARKS[code.check]) return "";
  return CHECK_MARKS[code.check] + (code.check === "fail" && code.findings > 0 ? " " + code.findings : "");
}

function checkWords(code) {
  if (!code || !code.check) return "";
  const n = code.findings || 0;
  const found = code.check === "fail" && n ? ` (${n} finding${n === 1 ? "" : "s"})` : "";
  return `checks ${code.check === "skip" ? "skipped" : code.check}${found}`;
}

function clock(ts) {
  return typeof ts === "number" ? new Date(ts * 1000).toLocaleTimeString() : "–";
}

// Rows by depth; inside a row, children follow the order of their parents, then creation order.
export function layout(nodes) {
  const rows = new Map();
  for (const n of nodes) {
    const d = Number(n.depth) || 0;
    if (!rows.has(d)) rows.set(d, []);
    rows.get(d).push(n);
  }
  const depths = [...rows.keys()].sort((a, b) => a - b);
  const rank = new Map();
  const creation = new Map(nodes.map((n, i) => [n.id, i]));
  for (const d of depths) {
    const row = rows.get(d);
    row.sort((a, b) => {
      const pa = rank.has(a.parent) ? rank.get(a.parent) : -1;
      const pb = rank.has(b.parent) ? rank.get(b.parent) : -1;
      return pa - pb || creation.get(a.id) - creation.get(b.id);
    });
    row.forEach((n, i) => rank.set(n.id, i));
  }
  const widest = Math.max(1, ...depths.map((d) => rows.get(d).length));
  const width = PAD * 2 + widest * BOX_W + (widest - 1) * GAP_X;
  const pos = new Map();
  depths.forEach((d, r) => {
    const row = rows.get(d);
    const rowWidth = row.length * BOX_W + (row.length - 1) * GAP_X;
    const x0 = (width - rowWidth) / 2;
    row.forEach((n, i) => pos.set(n.id, { x: x0 + i * (BOX_W + GAP_X), y: PAD + r * (BOX_H + GAP_Y) }));
  });
  const height = PAD * 2 + depths.length * BOX_H + Math.max(0, depths.length - 1) * GAP_Y + 20;
  return { pos, width, height };
}

// The small check badge in a node's top-right corner; its colours come from the CSS (data-check).
function checkBadge(mark, check) {
  const width = 10 + 7 * [...mark].length;
  const badge = s("g", { class: "shad-dag__check", transform: `translate(${BOX_W - width - 5},5)` });
  badge.dataset.check = check;
  badge.append(s("rect", { class: "shad-dag__check-bg", width, height: 16, rx: 8 }));
  const text = s("text", { class: "shad-dag__check-text", x: width / 2, y: 12, "text-anchor": "middle" });
  text.textContent = mark;
  badge.append(text);
  return badge;
}

function edgePath(a, b, kind) {
  if (kind === "child") {
    const x1 = a.x + BOX_W / 2, y1 = a.y + BOX_H, x2 = b.x + BOX_W / 2, y2 = b.y;
    const my = (y1 + y2) / 2;
    return `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`;
  }
  if (Math.abs(a.y - b.y) < 1) {
    // Dependencies between siblings: an arc under the row.
    const x1 = a.x + BOX_W / 2, x2 = b.x + BOX_W / 2, y = a.y + BOX_H;
    const dip = 14 + Math.min(30, Math.abs(x2 - x1) / 12);
    return `M${x1},${y} C${x1},${y + dip} ${x2},${y + dip} ${x2},${y + 2}`;
  }
  const down = b.y > a.y;
  const x1 = a.x + BOX_W / 2, y1 = down ? a.y + BOX_H : a.y, x2 = b.x + BOX_W / 2, y2 = down ? b.y : b.y + BOX_H;
  const my = (y1 + y2) / 2;
  return `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`;
}

function meter(label) {
  const box = h("div", "shad-dag__meter");
  const name = h("span", "shad-dag__meter-label", label);
  const bar = h("div", "shad-dag__meter-bar");
  const fill = h("div", "shad-dag__meter-fill");
  bar.appendChild(fill);
  const value = h("span", "shad-dag__meter-value", "–");
  box.append(name, bar, value);
  return {
    box,
    set(used, limit, text) {
      const ratio = typeof limit === "number" && limit > 0 ? Math.min(1, used / limit) : 0;
      fill.style.width = (ratio * 100).toFixed(1) + "%";
      box.dataset.level = ratio >= 0.9 ? "high" : ratio >= 0.7 ? "mid" : "low";
      value.textContent = text;
    },
  };
}

function section(parent, title) {
  const sec = h("section", "shad-dag__section");
  sec.appendChild(h("h4", "shad-dag__section-title", title));
  parent.appendChild(sec);
  return sec;
}

function facts(parent, rows) {
  const dl = h("dl", "shad-dag__facts");
  for (const [k, v] of rows) {
    if (v === undefined || v === null || v === "") continue;
    dl.append(h("dt", "", k), h("dd", "", v));
  }
  parent.appendChild(dl);
}

// A software node: the files it produced, its checks, its repairs and any contract change it asked for.
function renderCode(panel, code) {
  const check = code.check;
  if (check) {
    const sec = section(panel, "Checks" + (check.level ? ` (${check.level})` : ""));
    sec.classList.add("shad-dag__checks");
    const head = h("p", "shad-dag__check-summary");
    const mark = h("span", "shad-dag__check-mark", CHECK_MARKS[check.status] || "?");
    mark.dataset.check = check.status;
    head.append(mark, h("span", "", " " + checkWords({ check: check.status, findings: check.findings })));
    sec.appendChild(head);
    const list = h("ul", "shad-dag__check-list");
    for (const [name, st] of Object.entries(check.checks || {})) {
      const li = h("li", "shad-dag__check-item");
      li.dataset.check = st;
      const itemMark = h("span", "shad-dag__check-mark", CHECK_MARKS[st] || "?");
      itemMark.dataset.check = st;
      li.append(itemMark, h("span", "", ` ${name}: ${st}`));
      list.appendChild(li);
    }
    if (list.childElementCount) sec.appendChild(list);
  }
  const repairs = code.repairs || {};
  if (repairs.count) {
    const sec = section(panel, `Repairs (${repairs.count})`);
    sec.classList.add("shad-dag__repairs");
    const list = h("ol", "shad-dag__repair-list");
    for (const a of repairs.attempts || []) {
      const what = [a.error_class, a.scope && `(${a.scope})`].filter(Boolean).join(" ");
      const li = h("li", "", `${a.attempt != null ? "#" + a.attempt + " " : ""}${what} → ${a.outcome || "?"}`);
      li.dataset.outcome = a.outcome || "";
      if (a.signature) li.title = a.signature;
      list.appendChild(li);
    }
    sec.appendChild(list);
  }
  for (const detail of code.contract_changes || []) {
    const box = h("div", "shad-dag__contract");
    box.append(h("strong", "", "Asked for a change in the contracts"), h("p", "", detail));
    panel.appendChild(box);
  }
  if ((code.files || []).length) {
    const more = code.files_total > code.files.length ? ` (${code.files.length} of ${code.files_total})` : "";
    const sec = section(panel, "Files" + more);
    sec.classList.add("shad-dag__files");
    const list = h("ul", "shad-dag__file-list");
    for (const f of code.files) list.appendChild(h("li", "", f));
    sec.appendChild(list);
  }
}

function renderDetails(panel, d, model, pendingId) {
  panel.replaceChildren();
  if (!pendingId) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  const head = h("div", "shad-dag__details-head");
  const title = h("span", "shad-dag__details-id", pendingId);
  const close = h("button", "shad-dag__close", "×");
  close.type = "button";
  close.title = "Close";
  close.setAttribute("aria-label", "Close the node details");
  close.addEventListener("click", () => {
    model.set("selected", "");
    model.save_changes();
  });
  head.append(title);
  if (d && d.status) {
    const badge = h("span", "shad-dag__badge", d.status);
    badge.dataset.status = d.status;
    head.append(badge);
  }
  head.append(close);
  panel.appendChild(head);
  if (!d || d.id !== pendingId) {
    panel.appendChild(h("p", "shad-dag__muted", "Loading the node's details…"));
    return;
  }
  panel.appendChild(h("p", "shad-dag__task", d.task));

  if (d.needs_human) {
    // The decision itself is taken in the checkpoint widget (widgets/_checkpoint.py) below the DAG.
    const box = h("div", "shad-dag__checkpoint");
    box.appendChild(h("strong", "", "This node is waiting for a human."));
    const cp = d.checkpoint || {};
    const why = cp.reason || cp.question || cp.message;
    if (why) box.appendChild(h("p", "", why));
    const run = model.get("run_id") || "RUN_ID";
    box.appendChild(
      h("p", "shad-dag__muted", `Decide in its checkpoint widget, or with %shad checkpoint ${run} ${pendingId} --approve`),
    );
    panel.appendChild(box);
  }

  facts(panel, [
    ["Stage", d.stage],
    ["Depth", d.depth],
    ["Parent", d.parent],
    ["Subtasks", (d.children || []).join(", ")],
    ["Depends on", [...(d.hard_deps || []), ...(d.soft_deps || []).map((x) => x + " (soft)")].join(", ")],
    ["Tokens", num(d.tokens)],
    ["Model calls", num(d.llm_calls)],
    ["Duration", seconds(d.duration_ms)],
    ["Started", clock(d.started_at)],
    ["Finished", clock(d.finished_at)],
    ["Phase", d.phase],
    ["Note", d.note],
  ]);

  if (d.error && d.error.message) {
    const sec = section(panel, "Error");
    sec.classList.add("shad-dag__error");
    const what = [d.error.error_class, d.error.phase && `in ${d.error.phase}`].filter(Boolean).join(" ");
    sec.appendChild(h("p", "", (what ? what + ": " : "") + d.error.message));
    if (d.error.trace) {
      const more = h("details", "");
      more.append(h("summary", "", "Trace"), h("pre", "shad-dag__pre", d.error.trace));
      sec.appendChild(more);
    }
  }

  if (d.code) renderCode(panel, d.code);

  if (d.retrieval) {
    const r = d.retrieval;
    const sec = section(panel, "Retrieval");
    facts(sec, [
      ["Method", r.method],
      ["Score", typeof r.score === "number" ? r.score.toFixed(2) : ""],
      ["Confidence", typeof r.confidence === "number" ? r.confidence.toFixed(2) : ""],
      ["Queries", (r.queries || []).join(" · ")],
      ["Why", r.why],
    ]);
  }

  for (const script of d.scripts || []) {
    const sec = section(panel, "Retrieval script: " + script.name);
    sec.classList.add("shad-dag__script");
    if (script.outcome) sec.appendChild(h("p", "shad-dag__muted", script.outcome));
    const pre = h("pre", "shad-dag__pre shad-dag__code");
    pre.appendChild(h("code", "", script.code));
    sec.appendChild(pre);
  }

  if ((d.context || []).length) {
    const shown = d.context.length < d.context_total ? ` (${d.context.length} of ${d.context_total})` : "";
    const sec = section(panel, "Context" + shown);
    sec.classList.add("shad-dag__context");
    for (const item of d.context) {
      const block = h("div", "shad-dag__excerpt");
      block.append(h("code", "shad-dag__cite", item.citation), h("blockquote", "", item.excerpt));
      sec.appendChild(block);
    }
  }

  if ((d.citations || []).length) {
    const sec = section(panel, "Citations");
    const list = h("ul", "shad-dag__citations");
    for (const c of d.citations) {
      const li = h("li", c.resolved ? "" : "shad-dag__unresolved", c.link + (c.resolved ? "" : " (unresolved)"));
      list.appendChild(li);
    }
    sec.appendChild(list);
  }

  if (d.answer) {
    const sec = section(panel, "Output" + (d.answer_truncated ? " (truncated)" : ""));
    sec.classList.add("shad-dag__answer");
    sec.appendChild(h("pre", "shad-dag__pre shad-dag__prose", d.answer));
  }
}

function render({ model, el }) {
  const uid = Math.random().toString(36).slice(2, 10);
  const root = h("div", "shad-dag");
  const header = h("div", "shad-dag__header");
  const title = h("span", "shad-dag__title", "Shad run");
  const status = h("span", "shad-dag__badge");
  const runId = h("code", "shad-dag__run-id");
  header.append(title, status, runId);
  const goal = h("div", "shad-dag__goal");
  const strip = h("div", "shad-dag__budget");
  const tokens = meter("Tokens");
  const nodesMeter = meter("Nodes");
  const wall = meter("Wall time");
  strip.append(tokens.box, nodesMeter.box, wall.box);
  const notice = h("div", "shad-dag__notice");
  const body = h("div", "shad-dag__body");
  const graph = h("div", "shad-dag__graph");
  const panel = h("aside", "shad-dag__details");
  panel.hidden = true;
  body.append(graph, panel);
  const legend = h("div", "shad-dag__legend");
  for (const st of STATUSES) {
    const item = h("span", "shad-dag__legend-item", st.replace("_", " ").toLowerCase());
    item.dataset.status = st;
    legend.appendChild(item);
  }
  const checkLegend = h("span", "shad-dag__legend-checks");
  for (const [st, word] of [["pass", "checks pass"], ["fail", "checks fail"], ["skip", "checks skipped"]]) {
    const item = h("span", "shad-dag__legend-check");
    const itemMark = h("span", "shad-dag__check-mark", CHECK_MARKS[st]);
    itemMark.dataset.check = st;
    item.append(itemMark, " " + word);
    checkLegend.appendChild(item);
  }
  checkLegend.hidden = true;
  legend.appendChild(checkLegend);
  root.append(header, goal, strip, notice, body, legend);
  el.appendChild(root);

  let wallBase = { wall: 0, at: performance.now() };

  function drawHeader() {
    const st = model.get("status") || "";
    root.dataset.status = st;
    status.textContent = st || "no run yet";
    status.dataset.status = st;
    runId.textContent = model.get("run_id") || "";
    goal.textContent = model.get("goal") || "";
    const text = model.get("notice") || "";
    notice.textContent = text;
    notice.hidden = !text;
  }

  function drawWall() {
    const b = model.get("budget") || {};
    const running = model.get("status") === "RUNNING";
    const w = wallBase.wall + (running ? (performance.now() - wallBase.at) / 1000 : 0);
    const limit = b.wall_limit_s;
    wall.set(w, limit, w.toFixed(1) + " s" + (typeof limit === "number" ? ` / ${num(limit)} s` : ""));
  }

  function drawBudget() {
    const b = model.get("budget") || {};
    const tl = b.tokens_limit;
    tokens.set(b.tokens_used || 0, tl, num(b.tokens_used || 0) + (typeof tl === "number" ? " / " + num(tl) : ""));
    const nl = b.nodes_limit;
    nodesMeter.set(
      b.nodes_total || 0,
      nl,
      `${num(b.nodes_done || 0)} done / ${num(b.nodes_total || 0)}` + (typeof nl === "number" ? ` (limit ${num(nl)})` : ""),
    );
    wallBase = { wall: Number(b.wall_s) || 0, at: performance.now() };
    drawWall();
  }

  function select(id) {
    model.set("selected", id);
    model.save_changes();
  }

  function drawGraph() {
    const nodes = model.get("nodes") || [];
    const edges = model.get("edges") || [];
    const selected = model.get("selected") || "";
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.nodeId : null;
    graph.replaceChildren();
    checkLegend.hidden = !nodes.some((n) => n.code && n.code.check);
    if (!nodes.length) {
      graph.appendChild(h("p", "shad-dag__muted", "Waiting for the run's first node…"));
      return;
    }
    const { pos, width, height } = layout(nodes);
    const svg = s("svg", { class: "shad-dag__svg", width, height, viewBox: `0 0 ${width} ${height}`, role: "group" });
    svg.setAttribute("aria-label", `DAG of ${nodes.length} nodes`);
    const defs = s("defs");
    const marker = s("marker", { id: `shad-dag-arrow-${uid}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.appendChild(s("path", { d: "M0,0 L10,5 L0,10 z", class: "shad-dag__arrow" }));
    defs.appendChild(marker);
    // Text never spills out of its box, whatever the font's width.
    const clipBox = s("clipPath", { id: `shad-dag-clip-${uid}` });
    clipBox.appendChild(s("rect", { x: 8, y: 0, width: BOX_W - 14, height: BOX_H }));
    defs.appendChild(clipBox);
    svg.appendChild(defs);
    const edgeLayer = s("g", { class: "shad-dag__edges" });
    for (const e of edges) {
      const a = pos.get(e.source), b = pos.get(e.target);
      if (!a || !b) continue;
      const path = s("path", { d: edgePath(a, b, e.kind), class: `shad-dag__edge shad-dag__edge--${e.kind}` });
      if (e.kind !== "child") path.setAttribute("marker-end", `url(#shad-dag-arrow-${uid})`);
      edgeLayer.appendChild(path);
    }
    svg.appendChild(edgeLayer);
    for (const n of nodes) {
      const p = pos.get(n.id);
      const g = s("g", { class: "shad-dag__node" + (n.id === selected ? " shad-dag__node--selected" : ""), transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button" });
      g.dataset.nodeId = n.id;
      g.dataset.status = n.status;
      const checked = checkWords(n.code);
      g.setAttribute("aria-label", `${n.id}: ${n.status}${checked ? ", " + checked : ""}. ${n.task}`);
      const tip = s("title");
      tip.textContent = `${n.id} [${n.status}]${n.phase ? " — " + n.phase : ""}\n${n.task}${n.error ? "\n" + n.error : ""}${checked ? "\n" + checked : ""}`;
      g.appendChild(tip);
      g.appendChild(s("rect", { class: "shad-dag__box", width: BOX_W, height: BOX_H, rx: 7 }));
      g.appendChild(s("rect", { class: "shad-dag__band", width: 6, height: BOX_H, rx: 3 }));
      const mark = checkMark(n.code);
      const label = s("text", { class: "shad-dag__label", x: 14, y: 18 });
      label.textContent = clip(n.id, mark ? 24 - mark.length - 2 : 24);
      const task = s("text", { class: "shad-dag__node-task", x: 14, y: 34 });
      task.textContent = clip(n.task, 28);
      const meta = s("text", { class: "shad-dag__node-meta", x: 14, y: 49 });
      const bits = [n.status.replace("_", " ").toLowerCase()];
      if (n.tokens) bits.push((n.tokens >= 1000 ? (n.tokens / 1000).toFixed(1) + "k" : n.tokens) + " tok");
      if (n.duration_ms) bits.push(seconds(n.duration_ms));
      else if (n.phase && n.status === "STARTED") bits.push(n.phase);
      meta.textContent = clip(bits.join(" · "), 34);
      const text = s("g", { "clip-path": `url(#shad-dag-clip-${uid})` });
      text.append(label, task, meta);
      g.appendChild(text);
      if (mark) g.appendChild(checkBadge(mark, n.code.check));
      g.addEventListener("click", () => select(n.id));
      g.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          select(n.id);
        }
      });
      svg.appendChild(g);
    }
    graph.appendChild(svg);
    fit();
    if (focused) {
      const again = svg.querySelector(`[data-node-id="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
  }

  // Shrink a wide DAG to the view while its text stays legible; wider than that, it scrolls.
  function fit() {
    const svg = graph.querySelector("svg");
    if (!svg) return;
    const natural = Number(svg.getAttribute("width"));
    const room = graph.clientWidth;
    svg.classList.toggle("shad-dag__svg--fit", room > 0 && natural > room && natural * 0.7 <= room);
  }
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => fit()) : null;
  if (resize) resize.observe(graph);

  function drawDetails() {
    renderDetails(panel, model.get("details") || {}, model, model.get("selected") || "");
  }

  const handlers = [
    ["change:status change:run_id change:goal change:notice", drawHeader],
    ["change:budget", drawBudget],
    ["change:nodes change:edges change:selected", drawGraph],
    ["change:details change:selected", drawDetails],
  ];
  // A flush changes several traits at once: draw each part once per frame, not once per trait.
  const due = new Set();
  let frame = 0;
  const later = (fn) => () => {
    due.add(fn);
    if (!frame) {
      frame = requestAnimationFrame(() => {
        frame = 0;
        const fns = [...due];
        due.clear();
        for (const f of fns) f();
      });
    }
  };
  const bound = handlers.map(([events, fn]) => [events, later(fn)]);
  // One name per call: every anywidget host supports that, not all split space-separated names.
  for (const [events, fn] of bound) for (const name of events.split(" ")) model.on(name, fn);
  const ticker = setInterval(() => {
    if (model.get("status") === "RUNNING") drawWall();
  }, 500);
  drawHeader();
  drawBudget();
  drawGraph();
  drawDetails();
  return () => {
    clearInterval(ticker);
    if (resize) resize.disconnect();
    if (frame) cancelAnimationFrame(frame);
    for (const [events, fn] of bound) for (const name of events.split(" ")) model.off(name, fn);
  };
}

export default { render };
