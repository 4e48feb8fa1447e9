// Shad's checkpoint widget: a node waiting for a person, and the five decisions. Its ES module for
// anywidget is decision.js (h, decisionFrame, decisionMessage, decisionWiring) followed by this file:
// no imports, nothing fetched, all text set through textContent (tasks and note previews come from the
// vault and the model, never trusted as HTML).

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
  const { part, root, header, title, badge, box, boxLabel, buttons, byAction, message } = decisionFrame("checkpoint", {
    title: "Checkpoint",
    actions: ACTIONS,
    box: {
      name: "text",
      rows: 2,
      placeholder: "Hint: what to look for — or, for Edit, the notes to use (Folder/Note, Other note)",
      label: "Hint, or the notes to use for Edit",
    },
    onAction: send,
  });
  const node = part("code", "node", "code");
  const run = part("code", "run", "ref");
  header.append(title, node, badge, run);
  const task = h("p", "shad-checkpoint__task");
  // Divs and spans, not dl/dt/dd: host pages style those globally (JupyterLab floats and sizes them).
  const why = part("div", "why", "rows");
  const signals = h("div", "shad-checkpoint__signals");
  const found = h("div", "shad-checkpoint__found");
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
    decisionMessage(message, model.get("message"));
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
      why.append(part("span", "label", "label", k), part("span", "value", "value", v));
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
        item.append(part("span", "label", "label", label(k)), part("span", "value", "value", value(sig[k])));
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
      block.append(part("code", "cite", "code", item.citation || item.path || ""), h("blockquote", "", clip(item.text, PREVIEW)));
      found.appendChild(block);
    }
    drawState();
  }

  function replied() {
    busy = false;
    drawState();
  }

  const redraw = {
    checkpoint: drawCheckpoint,
    node_id: drawCheckpoint,
    run_id: drawCheckpoint,
    decision: drawState,
    state: drawState,
    message: drawState,
  };
  return decisionWiring(model, { redraw, refusal: "rejected", box, onReply: replied, draw: drawCheckpoint });
}

export default { render };
