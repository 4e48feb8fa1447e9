// Shad's approval widget: a delete or a publish waiting for a person, with Approve / Reject and a note.
// Its ES module for anywidget is decision.js (h, decisionFrame, decisionMessage, decisionWiring)
// followed by this file: no imports, nothing fetched, all text set through textContent (paths, reasons
// and results come from the vault and from runs, never trusted as HTML).

const ACTIONS = [
  ["approve", "Approve", "Do it now (only if the note is unchanged since the request)"],
  ["reject", "Reject", "Turn it down: nothing is deleted or published"],
];
const STATE_TEXT = {
  pending: "waiting for a decision",
  executed: "approved and done",
  rejected: "rejected",
  failed: "approved, nothing done",
};

function render({ model, el }) {
  const { part, root, header, title, badge, box, boxLabel, buttons, byAction, message } = decisionFrame("approval", {
    actions: ACTIONS,
    box: { name: "note", rows: 1, placeholder: "A note kept with your decision (optional)", label: "Note" },
    onAction: send,
  });
  const id = part("code", "id", "ref");
  header.append(title, badge, id);
  const path = part("code", "path", "code");
  // Divs and spans, not dl/dt/dd: host pages style those globally (JupyterLab floats and sizes them).
  const details = part("div", "details", "rows");
  root.append(header, path, details, boxLabel, box, buttons, message);
  el.appendChild(root);

  let busy = false; // between a click and Python's reply: no second decision meanwhile

  function send(action) {
    if (busy || model.get("state") !== "pending") return;
    busy = true;
    draw();
    model.send({ type: "decide", action, note: box.value });
  }

  function draw() {
    const a = model.get("approval") || {};
    const state = model.get("state") || "pending";
    root.dataset.state = state;
    badge.dataset.state = state;
    badge.textContent = STATE_TEXT[state] || state;
    title.textContent = a.kind === "publish" ? "Publish" : "Delete";
    id.textContent = a.id !== undefined ? `#${a.id}` : "";
    path.textContent = a.path || "";
    details.replaceChildren();
    const rows = [
      ["To", a.target],
      ["Why", a.reason],
      ["Asked by", a.requested_by ? `${a.requested_by} at ${a.requested_at || "?"}` : ""],
      ["Decided by", a.decided_by ? `${a.decided_by} at ${a.decided_at || "?"}` : ""],
      ["Vault", a.vault],
    ];
    for (const [k, v] of rows) {
      if (!v) continue;
      details.append(part("span", "label", "label", k), part("span", "value", "value", v));
    }
    const open = state === "pending";
    for (const b of byAction.values()) b.disabled = busy || !open;
    box.disabled = busy || !open;
    decisionMessage(message, model.get("message"));
  }

  function replied() {
    busy = false;
    draw();
  }

  const redraw = { approval: draw, state: draw, message: draw };
  return decisionWiring(model, { redraw, refusal: "refused", box, onReply: replied, draw });
}

export default { render };
