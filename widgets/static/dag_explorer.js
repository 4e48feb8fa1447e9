// Shad's DAG explorer: the run's DAG laid out by dependency level (SVG) with fit, zoom and pan, a hover
// card with the full task, a timeline of time and tokens per node, a budget strip, Stop and Open report,
// and a details panel for the clicked node. Plain ES module for anywidget: no imports, nothing fetched, all text set through
// textContent (tasks, notes and answers come from the vault and the model, never trusted as HTML).

const SVG = "http://www.w3.org/2000/svg";
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

function button(cls, text, title) {
  const b = h("button", cls, text);
  b.type = "button";
  b.title = title;
  b.setAttribute("aria-label", title);
  return b;
}

// The layout, by dependency level: a node sits one row below its parent and below every node it
// depends on, so dependency edges point down instead of fanning under a row. A row wider than
// `perRow` boxes is folded: under parents that sit side by side, each parent's subtasks stack in a
// column under it; otherwise the row wraps onto staggered lines (a line's edges pass through the gaps
// of the line above). More than COLLAPSE_AT siblings collapse into one "+N more" box until expanded; an expanded
// group ends with a "− fewer" box that collapses it again.
export const BOX_W = 176;
export const BOX_H = 58;
const GAP_X = 22;
const GAP_Y = 40;
const STACK_GAP = 10;
const INDENT = 16;
const PAD = 16;
const PITCH = BOX_W + GAP_X;
export const COLLAPSE_AT = 12;
export const KEEP = 6;
const MAX_STACK = 8; // the most subtasks stacked in one column under their parent
// Nodes a collapsed group never hides: the ones a person is likely looking for.
const ACTIVE = new Set(["STARTED", "FAILED", "NEEDS_HUMAN"]);

// The row of each node: 0 for the root, else one below its parent and below each of its dependencies
// (a cycle, which the engine refuses anyway, falls back to the parent alone).
export function levels(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const level = new Map();
  const visiting = new Set();
  function of(id) {
    if (level.has(id)) return level.get(id);
    if (visiting.has(id)) return -1;
    visiting.add(id);
    const n = byId.get(id);
    let l = n.parent && byId.has(n.parent) ? of(n.parent) + 1 : 0;
    for (const d of [...(n.hard_deps || []), ...(n.soft_deps || [])]) {
      if (byId.has(d) && d !== id) l = Math.max(l, of(d) + 1);
    }
    visiting.delete(id);
    level.set(id, Math.max(0, l));
    return level.get(id);
  }
  for (const n of nodes) of(n.id);
  return level;
}

export function layout(nodes, opts = {}) {
  const perRow = Math.max(2, Math.floor(opts.perRow || 8));
  const expanded = opts.expanded || new Set();
  const selected = opts.selected || "";
  const creation = new Map(nodes.map((n, i) => [n.id, i]));
  const level = levels(nodes);
  const rows = new Map();
  for (const n of nodes) {
    const l = level.get(n.id);
    if (!rows.has(l)) rows.set(l, []);
    rows.get(l).push(n);
  }
  const order = new Map();
  let counter = 0;
  const plan = []; // per row: {entries, mode}
  let above = null; // the previous row's nodes when they sat on one line: id -> column index
  for (const l of [...rows.keys()].sort((a, b) => a - b)) {
    const row = rows.get(l);
    const rank = (n) => (order.has(n.parent) ? order.get(n.parent) : -1);
    row.sort((a, b) => rank(a) - rank(b) || creation.get(a.id) - creation.get(b.id));
    for (const n of row) order.set(n.id, counter++);
    const entries = [];
    for (let i = 0; i < row.length; ) {
      let j = i;
      while (j < row.length && row[j].parent === row[i].parent) j++;
      const members = row.slice(i, j);
      const key = `${row[i].parent || ""}@${l}`;
      const shown = [];
      const hidden = [];
      if (members.length > COLLAPSE_AT) {
        members.forEach((n, k) => (k < KEEP || ACTIVE.has(n.status) || n.id === selected ? shown : hidden).push(n));
      }
      if (hidden.length >= 2 && !expanded.has(key)) {
        for (const n of shown) entries.push({ kind: "node", id: n.id, node: n, parent: n.parent });
        entries.push({ kind: "group", id: `group:${key}`, key, parent: row[i].parent, hidden });
      } else {
        for (const n of members) entries.push({ kind: "node", id: n.id, node: n, parent: n.parent });
        // An expanded group ends with a "− fewer" box that folds it back (only if folding hides something).
        if (hidden.length >= 2) entries.push({ kind: "fewer", id: `fewer:${key}`, key, parent: row[i].parent, hides: hidden.length });
      }
      i = j;
    }
    // Stack only under several parents, and not too deep: one parent's wide fan wraps instead.
    const under = new Map();
    for (const e of entries) under.set(e.parent, (under.get(e.parent) || 0) + 1);
    const stack =
      entries.length > perRow &&
      above !== null &&
      under.size >= 2 &&
      Math.max(...under.values()) <= MAX_STACK &&
      entries.every((e) => above.has(e.parent));
    plan.push({ entries, stack });
    above = !stack && entries.length <= perRow ? new Map(entries.map((e, k) => [e.id, k])) : null;
  }
  // The widest line sets the width; lines are centred in it, stacked columns hang under their parent.
  let columns = 1;
  for (const { entries, stack } of plan) {
    if (!stack) columns = Math.max(columns, Math.min(perRow, entries.length) + (entries.length > perRow ? 0.5 : 0));
  }
  const inner = columns * PITCH - GAP_X + INDENT;
  const pos = new Map();
  const items = [];
  const stacked = new Set();
  let y = PAD;
  for (const { entries, stack } of plan) {
    let bottom = y;
    if (stack) {
      const depthUnder = new Map();
      for (const e of entries) {
        const k = depthUnder.get(e.parent) || 0;
        depthUnder.set(e.parent, k + 1);
        const p = pos.get(e.parent);
        const at = { x: p.x + INDENT, y: y + k * (BOX_H + STACK_GAP) };
        items.push({ ...e, ...at });
        pos.set(e.id, at);
        stacked.add(e.id);
        bottom = Math.max(bottom, at.y + BOX_H);
      }
    } else {
      const lines = Math.ceil(entries.length / perRow);
      entries.forEach((e, k) => {
        const line = Math.floor(k / perRow);
        const inLine = Math.min(perRow, entries.length - line * perRow);
        const shift = lines > 1 && line % 2 ? PITCH / 2 : 0;
        const x0 = PAD + (inner - INDENT - (inLine * PITCH - GAP_X) - (lines > 1 ? PITCH / 2 : 0)) / 2;
        const at = { x: x0 + shift + (k % perRow) * PITCH, y: y + line * (BOX_H + STACK_GAP) };
        items.push({ ...e, ...at });
        pos.set(e.id, at);
        bottom = Math.max(bottom, at.y + BOX_H);
      });
    }
    for (const e of entries) if (e.kind === "group") for (const n of e.hidden) pos.set(n.id, pos.get(e.id));
    y = bottom + GAP_Y;
  }
  const alias = new Map();
  for (const it of items) if (it.kind === "group") for (const n of it.hidden) alias.set(n.id, it.id);
  return { pos, items, alias, stacked, level, width: PAD * 2 + inner, height: Math.max(y - GAP_Y + PAD, PAD * 2 + BOX_H) };
}

// The line length whose layout fits a box of `room` x `height` at the largest scale (the DAG's shape
// follows the box: a 50-node run fills it instead of becoming a narrow, tall strip).
const GOOD = 0.85;

export function bestLayout(nodes, opts, room, height) {
  let best = null;
  for (let perRow = 3; perRow <= 16; perRow++) {
    const lay = layout(nodes, { ...opts, perRow });
    // Any scale from GOOD up reads well: among those, the lower layout, so a row wraps only when it must.
    const k = Math.min(GOOD, room / lay.width, height / lay.height);
    if (!best || k > best.k + 0.001 || (k > best.k - 0.001 && lay.height < best.lay.height)) best = { k, lay };
    if (lay.width > room * 3) break;
  }
  return best.lay;
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

// A subtask stacked under its parent hangs from a spine on the parent's left; any other edge runs from
// the bottom of its source to the top of its target (an arc under the row for the rare same-row pair).
export function edgePath(a, b, kind, stackedChild) {
  if (kind === "child" && stackedChild) {
    const x = a.x + INDENT / 2;
    return `M${x},${a.y + BOX_H} V${b.y + BOX_H / 2} H${b.x}`;
  }
  if (Math.abs(a.y - b.y) < 1) {
    const x1 = a.x + BOX_W / 2, x2 = b.x + BOX_W / 2, y = a.y + BOX_H;
    const dip = 14 + Math.min(30, Math.abs(x2 - x1) / 12);
    return `M${x1},${y} C${x1},${y + dip} ${x2},${y + dip} ${x2},${y + 2}`;
  }
  const down = b.y > a.y;
  const x1 = a.x + BOX_W / 2, y1 = down ? a.y + BOX_H : a.y, x2 = b.x + BOX_W / 2, y2 = down ? b.y : b.y + BOX_H;
  const bend = Math.min(GAP_Y, Math.abs(y2 - y1) / 2);
  return `M${x1},${y1} C${x1},${y1 + (down ? bend : -bend)} ${x2},${y2 - (down ? bend : -bend)} ${x2},${y2}`;
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
    set(used, limit, text, note = "", why = "") {
      const ratio = typeof limit === "number" && limit > 0 ? Math.min(1, used / limit) : 0;
      fill.style.width = (ratio * 100).toFixed(1) + "%";
      box.dataset.level = ratio >= 0.9 ? "high" : ratio >= 0.7 ? "mid" : "low";
      value.textContent = text;
      // A note (over budget) is said in the label, short, and in full in the tooltip.
      name.textContent = note ? `${label} · ${note}` : label;
      if (note) box.title = why || note;
      else box.removeAttribute("title");
      box.dataset.note = note ? "yes" : "";
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

// The run's report, as Python sent it (markdown source shown as text: it comes from the vault and the
// model, so it is never parsed as HTML here).
function renderReport(panel, r, close) {
  panel.replaceChildren();
  panel.hidden = false;
  const head = h("div", "shad-dag__details-head");
  const x = h("button", "shad-dag__close", "×");
  x.type = "button";
  x.title = "Close";
  x.setAttribute("aria-label", "Close the report");
  x.addEventListener("click", close);
  head.append(h("span", "shad-dag__details-id", "Report"), x);
  panel.appendChild(head);
  if (r.path) panel.appendChild(h("code", "shad-dag__report-path", r.path));
  if (r.error) panel.appendChild(h("p", "shad-dag__error", r.error));
  if (r.text) panel.appendChild(h("pre", "shad-dag__pre shad-dag__prose shad-dag__report", r.text));
}

function render({ model, el }) {
  const uid = Math.random().toString(36).slice(2, 10);
  const root = h("div", "shad-dag");
  const header = h("div", "shad-dag__header");
  const title = h("span", "shad-dag__title", "Shad run");
  const status = h("span", "shad-dag__badge");
  const runId = h("code", "shad-dag__run-id");
  const actions = h("span", "shad-dag__actions");
  const reportButton = button("shad-dag__action shad-dag__open-report", "Open report", "Show the run's report here");
  const stopButton = button("shad-dag__action shad-dag__stop", "Stop", "Cancel the run: it ends PARTIAL and can be resumed");
  actions.append(reportButton, stopButton);
  header.append(title, status, runId, actions);
  const goal = h("div", "shad-dag__goal");
  const strip = h("div", "shad-dag__budget");
  const tokens = meter("Tokens");
  const nodesMeter = meter("Nodes");
  const wall = meter("Wall time");
  strip.append(tokens.box, nodesMeter.box, wall.box);
  const notice = h("div", "shad-dag__notice");
  const body = h("div", "shad-dag__body");
  const main = h("div", "shad-dag__main");
  const graph = h("div", "shad-dag__graph");
  const tools = h("div", "shad-dag__tools");
  const zoomOut = button("shad-dag__tool", "−", "Zoom out (or Ctrl + wheel)");
  const zoomIn = button("shad-dag__tool", "+", "Zoom in (or Ctrl + wheel)");
  const fitButton = button("shad-dag__tool shad-dag__fit", "Fit", "Fit the whole DAG in view");
  zoomOut.dataset.zoom = "out";
  zoomIn.dataset.zoom = "in";
  tools.append(zoomOut, zoomIn, fitButton);
  const svg = s("svg", { class: "shad-dag__svg", role: "group" });
  const defs = s("defs");
  const marker = s("marker", { id: `shad-dag-arrow-${uid}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.appendChild(s("path", { d: "M0,0 L10,5 L0,10 z", class: "shad-dag__arrow" }));
  // Text never spills out of its box, whatever the font's width.
  const clipBox = s("clipPath", { id: `shad-dag-clip-${uid}` });
  clipBox.appendChild(s("rect", { x: 8, y: 0, width: BOX_W - 14, height: BOX_H }));
  defs.append(marker, clipBox);
  const viewport = s("g", { class: "shad-dag__viewport" });
  svg.append(defs, viewport);
  const empty = h("p", "shad-dag__muted shad-dag__empty", "Waiting for the run's first node…");
  const tip = h("div", "shad-dag__tip");
  tip.hidden = true;
  tip.setAttribute("role", "tooltip");
  graph.append(svg, empty, tools, tip);
  const timeline = h("details", "shad-dag__timeline");
  timeline.open = true;
  const tlSummary = h("summary", "shad-dag__section-title", "Timeline: time and tokens per node");
  const tlRows = h("div", "shad-dag__tl-rows");
  timeline.append(tlSummary, tlRows);
  main.append(graph, timeline);
  const panel = h("aside", "shad-dag__details");
  panel.hidden = true;
  body.append(main, panel);
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
  let report = null; // the report shown in the side panel ({path, text, error}), or null
  let stopping = false;

  function running() {
    return ["RUNNING", "PENDING"].includes(model.get("status") || "");
  }

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
    if (st !== "RUNNING") stopping = false;
    stopButton.hidden = !(st === "RUNNING" && model.get("can_stop"));
    stopButton.disabled = stopping;
    stopButton.textContent = stopping ? "Stopping…" : "Stop";
    reportButton.hidden = !model.get("report_path") || running();
  }

  // Stop: a message to Python, which cancels the run. While a cell blocks on the run the kernel reads no
  // widget message until the cell ends, so then the kernel is interrupted, as its own Stop button does:
  // the runner cancels the run on the interrupt and the cell ends in one line (PARTIAL, resumable).
  stopButton.addEventListener("click", () => {
    stopping = true;
    drawHeader();
    model.send({ type: "stop" });
    const manager = model.widget_manager;
    const kernel = manager && manager.kernel;
    if (model.get("cell_waiting") && kernel && typeof kernel.interrupt === "function") {
      Promise.resolve(kernel.interrupt()).catch(() => {
        stopping = false;
        notice.textContent = "Stop could not interrupt the kernel: use the notebook's Interrupt button.";
        notice.hidden = false;
        drawHeader();
      });
    }
  });
  reportButton.addEventListener("click", () => model.send({ type: "open_report" }));

  function drawWall() {
    const b = model.get("budget") || {};
    const w = wallBase.wall + (model.get("status") === "RUNNING" ? (performance.now() - wallBase.at) / 1000 : 0);
    const limit = b.wall_limit_s;
    wall.set(w, limit, w.toFixed(1) + " s" + (typeof limit === "number" ? ` / ${num(limit)} s` : ""));
  }

  function drawBudget() {
    const b = model.get("budget") || {};
    const tl = b.tokens_limit;
    const over = b.tokens_over_by
      ? `Over budget by ${num(b.tokens_over_by)} tokens: the provider reported more usage than the run's budget allowed (see the report).`
      : "";
    tokens.set(b.tokens_used || 0, tl, num(b.tokens_used || 0) + (typeof tl === "number" ? " / " + num(tl) : ""), over && "over budget", over);
    const nl = b.nodes_limit;
    nodesMeter.set(
      b.nodes_total || 0,
      nl,
      // Done is answered (or cached); pruned and failed nodes are counted apart, never as done.
      `${num(b.nodes_succeeded ?? b.nodes_done ?? 0)} done / ${num(b.nodes_total || 0)}` +
        (b.nodes_pruned ? ` · ${num(b.nodes_pruned)} pruned` : "") +
        (b.nodes_failed ? ` · ${num(b.nodes_failed)} failed` : "") +
        (typeof nl === "number" ? ` (limit ${num(nl)})` : ""),
    );
    wallBase = { wall: Number(b.wall_s) || 0, at: performance.now() };
    drawWall();
  }

  function select(id) {
    report = null;
    model.set("selected", id);
    model.save_changes();
  }

  // --- the view: fit, zoom and pan -------------------------------------------------------------------
  const view = { k: 1, x: 0, y: 0, auto: true };
  let size = { width: 0, height: 0 };
  let rootPos = null;
  const MIN_K = 0.45; // below this a fit would make labels unreadable: show the top of the DAG instead
  const MAX_H = 600;

  function apply() {
    viewport.setAttribute("transform", `translate(${view.x.toFixed(1)},${view.y.toFixed(1)}) scale(${view.k.toFixed(4)})`);
    root.style.setProperty("--shad-dag-zoom", String(view.k));
    graph.dataset.zoom = view.k.toFixed(3);
  }

  // The box is as tall as the fitted DAG needs (at most MAX_H); the DAG is scaled to fit it whole, never
  // above its natural size. A DAG too big to fit legibly shows its root at the top, centred.
  function fit() {
    const room = graph.clientWidth || 900;
    const natural = Math.min(1, room / size.width);
    const height = Math.max(160, Math.min(MAX_H, Math.ceil(size.height * natural)));
    graph.style.height = height + "px";
    svg.setAttribute("width", room);
    svg.setAttribute("height", height);
    const k = Math.min(1, room / size.width, height / size.height);
    if (k >= MIN_K || !rootPos) {
      view.k = k;
      view.x = (room - size.width * k) / 2;
      view.y = (height - size.height * k) / 2;
    } else {
      view.k = MIN_K;
      view.x = room / 2 - (rootPos.x + BOX_W / 2) * MIN_K;
      view.y = 8 - rootPos.y * MIN_K + 8;
    }
    view.auto = true;
    apply();
  }

  function zoomAt(factor, cx, cy) {
    const k = Math.max(0.2, Math.min(2.5, view.k * factor));
    view.x = cx - ((cx - view.x) * k) / view.k;
    view.y = cy - ((cy - view.y) * k) / view.k;
    view.k = k;
    view.auto = false;
    apply();
  }

  const centre = () => [graph.clientWidth / 2, graph.clientHeight / 2];
  zoomIn.addEventListener("click", () => zoomAt(1.25, ...centre()));
  zoomOut.addEventListener("click", () => zoomAt(0.8, ...centre()));
  fitButton.addEventListener("click", () => fit());
  // A plain wheel scrolls the notebook; Ctrl (or a trackpad pinch, which Chromium reports so) zooms.
  graph.addEventListener(
    "wheel",
    (ev) => {
      if (!(ev.ctrlKey || ev.metaKey)) return;
      ev.preventDefault();
      const r = graph.getBoundingClientRect();
      zoomAt(Math.exp(-ev.deltaY * 0.0025), ev.clientX - r.left, ev.clientY - r.top);
    },
    { passive: false },
  );
  let drag = null;
  let dragged = false;
  svg.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y, id: ev.pointerId };
    dragged = false;
  });
  svg.addEventListener("pointermove", (ev) => {
    if (!drag || ev.pointerId !== drag.id) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!dragged && Math.hypot(dx, dy) < 4) return;
    if (!dragged) svg.setPointerCapture(ev.pointerId);
    dragged = true;
    hideTip();
    view.x = drag.vx + dx;
    view.y = drag.vy + dy;
    view.auto = false;
    graph.classList.add("shad-dag__graph--panning");
    apply();
  });
  const endDrag = () => {
    drag = null;
    graph.classList.remove("shad-dag__graph--panning");
  };
  svg.addEventListener("pointerup", endDrag);
  svg.addEventListener("pointercancel", endDrag);
  // A drag that ends on a node is a pan, not a click.
  svg.addEventListener("click", (ev) => {
    if (dragged) {
      ev.stopPropagation();
      dragged = false;
    }
  }, true);

  // --- the hover card: the full task and the node's numbers -------------------------------------------
  function showTip(g, n) {
    tip.replaceChildren();
    const head = h("div", "shad-dag__tip-head");
    const badge = h("span", "shad-dag__badge", n.status.replace("_", " ").toLowerCase());
    badge.dataset.status = n.status;
    head.append(h("code", "shad-dag__tip-id", n.id), badge);
    tip.append(head, h("div", "shad-dag__tip-task", n.task || "(no task text yet)"));
    const bits = [];
    if (n.tokens) bits.push(`${num(n.tokens)} tokens`);
    if (n.llm_calls) bits.push(`${num(n.llm_calls)} model call${n.llm_calls === 1 ? "" : "s"}`);
    if (n.duration_ms) bits.push(seconds(n.duration_ms));
    if (n.phase) bits.push(n.phase);
    if (bits.length) tip.append(h("div", "shad-dag__tip-meta", bits.join(" · ")));
    for (const extra of [n.error, n.note, checkWords(n.code)]) if (extra) tip.append(h("div", "shad-dag__tip-note", extra));
    tip.hidden = false;
    const gr = graph.getBoundingClientRect(), nr = g.getBoundingClientRect();
    const w = Math.min(360, gr.width - 16);
    tip.style.maxWidth = w + "px";
    const left = Math.max(8, Math.min(nr.left - gr.left, gr.width - tip.offsetWidth - 8));
    const below = nr.bottom - gr.top + 6;
    const top = below + tip.offsetHeight > gr.height && nr.top - gr.top > tip.offsetHeight + 6 ? nr.top - gr.top - tip.offsetHeight - 6 : below;
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }

  function hideTip() {
    tip.hidden = true;
  }

  // --- the graph ------------------------------------------------------------------------------------
  const expanded = new Set();

  function nodeBox(n, p, selected, maxTokens) {
    const g = s("g", { class: "shad-dag__node" + (n.id === selected ? " shad-dag__node--selected" : ""), transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button" });
    g.dataset.nodeId = n.id;
    g.dataset.status = n.status;
    const checked = checkWords(n.code);
    g.setAttribute("aria-label", `${n.id}: ${n.status}${checked ? ", " + checked : ""}. ${n.task}`);
    g.appendChild(s("rect", { class: "shad-dag__box", width: BOX_W, height: BOX_H, rx: 7 }));
    g.appendChild(s("rect", { class: "shad-dag__band", width: 6, height: BOX_H, rx: 3 }));
    const mark = checkMark(n.code);
    const label = s("text", { class: "shad-dag__label", x: 14, y: 17 });
    label.textContent = clip(n.id, mark ? 22 - mark.length - 2 : 22);
    const task = s("text", { class: "shad-dag__node-task", x: 14, y: 33 });
    task.textContent = clip(n.task, 27);
    const meta = s("text", { class: "shad-dag__node-meta", x: 14, y: 47 });
    const bits = [n.status.replace("_", " ").toLowerCase()];
    if (n.tokens) bits.push((n.tokens >= 1000 ? (n.tokens / 1000).toFixed(1) + "k" : n.tokens) + " tok");
    if (n.duration_ms) bits.push(seconds(n.duration_ms));
    else if (n.phase && n.status === "STARTED" && n.phase !== "started") bits.push(n.phase);
    meta.textContent = clip(bits.join(" · "), 32);
    const text = s("g", { "clip-path": `url(#shad-dag-clip-${uid})` });
    text.append(label, task, meta);
    g.appendChild(text);
    // The node's share of the run's tokens, as a bar along its bottom edge.
    if (n.tokens && maxTokens) {
      const w = Math.max(2, ((BOX_W - 18) * n.tokens) / maxTokens);
      g.appendChild(s("rect", { class: "shad-dag__token-bar", x: 12, y: BOX_H - 6, width: w.toFixed(1), height: 3, rx: 1.5 }));
    }
    if (mark) g.appendChild(checkBadge(mark, n.code.check));
    g.addEventListener("click", () => select(n.id));
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        select(n.id);
      }
    });
    g.addEventListener("pointerenter", () => !drag && showTip(g, n));
    g.addEventListener("pointerleave", hideTip);
    g.addEventListener("focus", () => showTip(g, n));
    g.addEventListener("blur", hideTip);
    return g;
  }

  function groupBox(it, p) {
    const g = s("g", { class: "shad-dag__node shad-dag__group", transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button" });
    g.dataset.group = it.key;
    g.dataset.status = "GROUP";
    const counts = {};
    for (const n of it.hidden) counts[n.status] = (counts[n.status] || 0) + 1;
    const summary = Object.entries(counts).map(([st, c]) => `${c} ${st.replace("_", " ").toLowerCase()}`).join(", ");
    g.setAttribute("aria-label", `${it.hidden.length} more subtasks of ${it.parent}: ${summary}. Click to show them.`);
    g.appendChild(s("rect", { class: "shad-dag__box shad-dag__group-box", width: BOX_W, height: BOX_H, rx: 7 }));
    const big = s("text", { class: "shad-dag__label", x: 14, y: 24 });
    big.textContent = `+${it.hidden.length} more`;
    const small = s("text", { class: "shad-dag__node-meta", x: 14, y: 42 });
    small.textContent = clip(summary, 30);
    g.append(big, small);
    const open = () => {
      expanded.add(it.key);
      drawGraph();
      const fewer = viewport.querySelector(`[data-fewer="${CSS.escape(it.key)}"]`);
      if (fewer) fewer.focus(); // keyboard users stay on the group, now on the box that folds it back
    };
    g.addEventListener("click", open);
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        open();
      }
    });
    return g;
  }

  // The "− fewer" box at the end of an expanded group: folds the group back into its "+N more" box.
  function fewerBox(it, p) {
    const g = s("g", { class: "shad-dag__node shad-dag__group shad-dag__fewer", transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button" });
    g.dataset.fewer = it.key;
    g.dataset.status = "GROUP";
    g.setAttribute("aria-label", `Collapse ${it.hides} of the subtasks of ${it.parent} back into one box.`);
    g.appendChild(s("rect", { class: "shad-dag__box shad-dag__group-box", width: BOX_W, height: BOX_H, rx: 7 }));
    const big = s("text", { class: "shad-dag__label", x: 14, y: 24 });
    big.textContent = "− fewer";
    const small = s("text", { class: "shad-dag__node-meta", x: 14, y: 42 });
    small.textContent = `collapse ${it.hides} subtasks`;
    g.append(big, small);
    const close = () => {
      expanded.delete(it.key);
      drawGraph();
      // Keyboard users land on the "+N more" box they can open again.
      const again = viewport.querySelector(`[data-group="${CSS.escape(it.key)}"]`);
      if (again) again.focus();
    };
    g.addEventListener("click", close);
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        close();
      }
    });
    return g;
  }

  function drawGraph() {
    const nodes = model.get("nodes") || [];
    const edges = model.get("edges") || [];
    const selected = model.get("selected") || "";
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.nodeId : null;
    viewport.replaceChildren();
    hideTip();
    checkLegend.hidden = !nodes.some((n) => n.code && n.code.check);
    empty.hidden = nodes.length > 0;
    svg.style.display = nodes.length ? "" : "none";
    tools.hidden = !nodes.length;
    if (!nodes.length) {
      graph.style.height = "";
      return;
    }
    // The edges carry the dependencies (the node list keeps only light fields).
    const full = new Map(nodes.map((n) => [n.id, { ...n, hard_deps: [], soft_deps: [] }]));
    for (const e of edges) if (e.kind !== "child" && full.has(e.target) && full.has(e.source)) full.get(e.target)[e.kind + "_deps"].push(e.source);
    const lay = bestLayout([...full.values()], { expanded, selected }, graph.clientWidth || 900, MAX_H);
    svg.setAttribute("aria-label", `DAG of ${nodes.length} nodes`);
    const edgeLayer = s("g", { class: "shad-dag__edges" });
    const drawn = new Set();
    const spot = (id) => lay.alias.get(id) || id;
    for (const e of edges) {
      const from = spot(e.source), to = spot(e.target);
      const a = lay.pos.get(e.source), b = lay.pos.get(e.target);
      const key = `${from}>${to}>${e.kind}`;
      if (!a || !b || from === to || drawn.has(key)) continue;
      drawn.add(key);
      const path = s("path", { d: edgePath(a, b, e.kind, lay.stacked.has(to)), class: `shad-dag__edge shad-dag__edge--${e.kind}` });
      if (e.kind !== "child") path.setAttribute("marker-end", `url(#shad-dag-arrow-${uid})`);
      edgeLayer.appendChild(path);
    }
    viewport.appendChild(edgeLayer);
    const maxTokens = Math.max(0, ...nodes.map((n) => n.tokens || 0));
    for (const it of lay.items) {
      const box = it.kind === "group" ? groupBox(it, it) : it.kind === "fewer" ? fewerBox(it, it) : nodeBox(full.get(it.id), it, selected, maxTokens);
      viewport.appendChild(box);
    }
    size = { width: lay.width, height: lay.height };
    rootPos = lay.pos.get("root") || lay.items[0] || null;
    if (view.auto) fit(); // until the user zooms or pans, the view follows the growing DAG
    else apply();
    if (focused) {
      const again = viewport.querySelector(`[data-node-id="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
  }

  // --- the timeline: when each node ran, and what it spent (as LangGraph Studio shows a run) ---------
  function drawTimeline() {
    const nodes = (model.get("nodes") || []).filter((n) => typeof n.started_at === "number");
    tlRows.replaceChildren();
    timeline.hidden = !nodes.length;
    if (!nodes.length) return;
    nodes.sort((a, b) => a.started_at - b.started_at);
    const t0 = nodes[0].started_at;
    const b = model.get("budget") || {};
    const live = model.get("status") === "RUNNING" ? t0 + (Number(b.wall_s) || 0) : 0;
    const ends = nodes.map((n) => (typeof n.finished_at === "number" ? n.finished_at : Math.max(live, n.started_at)));
    const span = Math.max(0.001, Math.max(...ends, live) - t0);
    const maxTokens = Math.max(1, ...nodes.map((n) => n.tokens || 0));
    const selected = model.get("selected") || "";
    const axis = h("div", "shad-dag__tl-row shad-dag__tl-axis");
    axis.append(h("span", "shad-dag__tl-id", "node"), h("span", "shad-dag__tl-track", `0 – ${span.toFixed(1)} s`), h("span", "shad-dag__tl-tokens", "tokens"));
    tlRows.appendChild(axis);
    nodes.forEach((n, i) => {
      const row = h("div", "shad-dag__tl-row" + (n.id === selected ? " shad-dag__tl-row--selected" : ""));
      row.dataset.nodeId = n.id;
      row.dataset.status = n.status;
      const open = typeof n.finished_at !== "number";
      row.title = `${n.id} [${n.status}] ${((n.started_at - t0)).toFixed(2)} s → ${open ? "…" : (ends[i] - t0).toFixed(2) + " s"}, ${num(n.tokens || 0)} tokens\n${n.task}`;
      const track = h("span", "shad-dag__tl-track");
      const bar = h("span", "shad-dag__tl-bar");
      bar.style.left = ((100 * (n.started_at - t0)) / span).toFixed(2) + "%";
      bar.style.width = Math.max(0.4, (100 * (ends[i] - n.started_at)) / span).toFixed(2) + "%";
      track.appendChild(bar);
      const tok = h("span", "shad-dag__tl-tokens");
      const tbar = h("span", "shad-dag__tl-token-bar");
      tbar.style.width = ((60 * (n.tokens || 0)) / maxTokens).toFixed(1) + "px";
      tok.append(tbar, h("span", "shad-dag__tl-token-num", num(n.tokens || 0)));
      row.append(h("span", "shad-dag__tl-id", n.id), track, tok);
      row.addEventListener("click", () => select(n.id));
      tlRows.appendChild(row);
    });
  }

  function drawDetails() {
    if (report) {
      renderReport(panel, report, () => {
        report = null;
        drawDetails();
      });
      return;
    }
    renderDetails(panel, model.get("details") || {}, model, model.get("selected") || "");
  }

  function onMessage(msg) {
    if (msg && msg.type === "report") {
      report = msg;
      drawDetails();
      panel.scrollTop = 0;
    }
  }
  model.on("msg:custom", onMessage);

  // A new width (the details panel opened, the window changed): lay out again for it, unless the user
  // has zoomed or panned to a view of their own. Only width changes count: the fit sets the height.
  let lastWidth = 0;
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => {
    const width = graph.clientWidth;
    if (width === lastWidth) return;
    lastWidth = width;
    if (view.auto && size.width) later(drawGraph)();
  }) : null;

  const handlers = [
    ["change:status change:run_id change:goal change:notice change:can_stop change:report_path change:cell_waiting", drawHeader],
    ["change:budget", drawBudget],
    ["change:nodes change:edges change:selected", drawGraph],
    ["change:nodes change:selected change:status change:budget", drawTimeline],
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
  if (resize) resize.observe(graph);
  // One name per call: every anywidget host supports that, not all split space-separated names.
  for (const [events, fn] of bound) for (const name of events.split(" ")) model.on(name, fn);
  const ticker = setInterval(() => {
    if (model.get("status") === "RUNNING") drawWall();
  }, 500);
  drawHeader();
  drawBudget();
  drawGraph();
  drawTimeline();
  drawDetails();
  return () => {
    clearInterval(ticker);
    if (resize) resize.disconnect();
    if (frame) cancelAnimationFrame(frame);
    model.off("msg:custom", onMessage);
    for (const [events, fn] of bound) for (const name of events.split(" ")) model.off(name, fn);
  };
}

export default { render };
