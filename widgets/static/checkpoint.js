// Shad's checkpoint widget: a node waiting for a person, and the five decisions. Plain ES module for
// anywidget: no imports, nothing fetched, all text set through textContent (tasks and note previews
// come from the vault and the model, never trusted as HTML).

const ACTIONS = [
  ["approve", "Approve", "Use the context retrieval found, weak as it is"],
  ["edit", "Edit", "Use the notes named in the box as the node's context"],
  ["hint", "Hint", "One more retrieval round guided by the hint in the box"],
  ["skip", "Skip", "Leave this node out of the report"],
  ["stop", "Stop", "Stop the run here"],
];
const STATE_TEXT = {
  waiting: "waiting for a decision",
  resuming: "resuming the run…",
  resumed: "run resumed",
  failed: "resume failed",
};
const PREVIEW = 220;

function h(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function clip(text, n) {
  const t = String(text || "").replace(/\s+/g, " ").trim();
  return t.length <= n ? t : t.slice(0, n - 1) + "…";
}

function value(v) {
  if (typeof v === "number" && isFinite(v)) return Number.isInteger(v) ? String(v) : v.toFixed(2);
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (v === null || v === undefined || v === "") return "–";
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

function label(key) {
  const t = String(key).replace(/_/g, " ");
  return t.charAt(0).toUpperCase() + t.slice(1);
}

function render({ model, el }) {
  const uid = Math.random().toString(36).slice(2, 10);
  const root = h("div", "shad-checkpoint");
  const header = h("div", "shad-checkpoint__header");
  const title = h("span", "shad-checkpoint__title", "Checkpoint");
  const node = h("code", "shad-checkpoint__node");
  const badge = h("span", "shad-checkpoint__state");
  const run = h("code", "shad-checkpoint__run");
  header.append(title, node, badge, run);
  const task = h("p", "shad-checkpoint__task");
  // Divs and spans, not dl/dt/dd: host pages style those globally (JupyterLab floats and sizes them).
  const why = h("div", "shad-checkpoint__why");
  const signals = h("div", "shad-checkpoint__signals");
  const found = h("div", "shad-checkpoint__found");
  const box = h("textarea", "shad-checkpoint__text");
  box.id = `shad-checkpoint-text-${uid}`;
  box.rows = 2;
  box.placeholder = "Hint: what to look for — or, for Edit, the notes to use (Folder/Note, Other note)";
  const boxLabel = h("label", "shad-checkpoint__text-label", "Hint, or the notes to use for Edit");
  boxLabel.htmlFor = box.id;
  const buttons = h("div", "shad-checkpoint__buttons");
  const byAction = new Map();
  for (const [action, text, tip] of ACTIONS) {
    const b = h("button", "shad-checkpoint__button", text);
    b.type = "button";
    b.title = tip;
    b.dataset.action = action;
    b.addEventListener("click", () => send(action));
    byAction.set(action, b);
    buttons.appendChild(b);
  }
  const message = h("div", "shad-checkpoint__message");
  message.setAttribute("role", "status");
  root.append(header, task, why, signals, found, boxLabel, box, buttons, message);
  el.appendChild(root);

  let busy = false; // between a click and Python's reply: no second decision meanwhile

  function send(action) {
    if (busy || !usable()) return;
    busy = true;
    drawButtons();
    model.send({ type: "decide", action, text: box.value });
  }

  function usable() {
    const decision = model.get("decision") || {};
    return model.get("state") === "waiting" && !decision.action;
  }

  function drawButtons() {
    const decision = model.get("decision") || {};
    const options = new Set((model.get("checkpoint") || {}).options || ACTIONS.map((a) => a[0]));
    for (const [action, b] of byAction) {
      b.disabled = busy || !usable() || !options.has(action);
      b.classList.toggle("shad-checkpoint__button--chosen", decision.action === action);
    }
    box.disabled = busy || !usable();
  }

  function drawState() {
    const state = model.get("state") || "waiting";
    const decision = model.get("decision") || {};
    root.dataset.state = state;
    badge.dataset.state = state;
    badge.textContent = decision.action && state === "waiting" ? `decided: ${decision.action}` : STATE_TEXT[state] || state;
    const text = model.get("message") || "";
    message.textContent = text;
    message.hidden = !text;
    drawButtons();
  }

  function drawCheckpoint() {
    const cp = model.get("checkpoint") || {};
    node.textContent = model.get("node_id") || "";
    run.textContent = model.get("run_id") || "";
    task.textContent = cp.task || "";
    why.replaceChildren();
    for (const [k, v] of [["Why it stopped", cp.reason], ["Why it matters", cp.impact]]) {
      if (!v) continue;
      why.append(h("span", "shad-checkpoint__label", k), h("span", "shad-checkpoint__value", v));
    }
    signals.replaceChildren();
    const sig = cp.signals || {};
    const keys = Object.keys(sig);
    if (keys.length) {
      signals.appendChild(h("h4", "shad-checkpoint__section-title", "Confidence signals"));
      const list = h("div", "shad-checkpoint__signal-list");
      for (const k of keys) {
        const item = h("div", "shad-checkpoint__signal");
        item.dataset.signal = k;
        item.append(h("span", "shad-checkpoint__label", label(k)), h("span", "shad-checkpoint__value", value(sig[k])));
        list.appendChild(item);
      }
      signals.appendChild(list);
    }
    found.replaceChildren();
    const context = cp.context || [];
    const queries = cp.queries || [];
    found.appendChild(
      h("h4", "shad-checkpoint__section-title", context.length ? `What retrieval found (${context.length})` : "Retrieval found nothing"),
    );
    if (queries.length) found.appendChild(h("p", "shad-checkpoint__queries", "Queries: " + queries.join(" · ")));
    for (const item of context) {
      const block = h("div", "shad-checkpoint__excerpt");
      block.append(h("code", "shad-checkpoint__cite", item.citation || item.path || ""), h("blockquote", "", clip(item.text, PREVIEW)));
      found.appendChild(block);
    }
    drawState();
  }

  const onMsg = (msg) => {
    if (msg && (msg.type === "decided" || msg.type === "rejected")) {
      busy = false;
      if (msg.type === "decided") box.value = "";
      drawState();
    }
  };
  const handlers = [
    ["change:checkpoint", drawCheckpoint],
    ["change:node_id", drawCheckpoint],
    ["change:run_id", drawCheckpoint],
    ["change:decision", drawState],
    ["change:state", drawState],
    ["change:message", drawState],
  ];
  for (const [name, fn] of handlers) model.on(name, fn);
  model.on("msg:custom", onMsg);
  drawCheckpoint();
  return () => {
    for (const [name, fn] of handlers) model.off(name, fn);
    model.off("msg:custom", onMsg);
  };
}

export default { render };
