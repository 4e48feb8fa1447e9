// What Shad's decision widgets (a checkpoint, an approval) share: their frame (card, header, text box,
// buttons, message line) and their wiring to Python. Plain function declarations, no module syntax:
// each widget's ES module is this text followed by its own (which exports render), so the names here
// must not be declared again there. Nothing fetched, all text set through textContent.

function h(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// The parts every decision widget has, each with its widget's class (`shad-<kind>__<name>`, what tests
// and host pages select) and the shared one decision.css styles (`shad-decision__<shared>`). `box`
// describes the text box: name (its class and id), rows, placeholder, label. A click on an action's
// button calls `onAction(action)`.
function decisionFrame(kind, { title, actions, box, onAction }) {
  const part = (tag, name, shared, text) => h(tag, `shad-${kind}__${name} shad-decision__${shared}`, text);
  const uid = Math.random().toString(36).slice(2, 10);
  const root = h("div", `shad-${kind} shad-decision`);
  const text = part("textarea", box.name, "box");
  text.id = `shad-${kind}-${box.name}-${uid}`;
  text.rows = box.rows;
  text.placeholder = box.placeholder;
  const boxLabel = part("label", `${box.name}-label`, "box-label", box.label);
  boxLabel.htmlFor = text.id;
  const buttons = part("div", "buttons", "buttons");
  const byAction = new Map();
  for (const [action, name, tip] of actions) {
    const b = part("button", "button", "button", name);
    b.type = "button";
    b.title = tip;
    b.dataset.action = action;
    b.addEventListener("click", () => onAction(action));
    byAction.set(action, b);
    buttons.appendChild(b);
  }
  const message = part("div", "message", "message");
  message.setAttribute("role", "status");
  return {
    part,
    root,
    header: part("div", "header", "header"),
    title: part("span", "title", "title", title),
    badge: part("span", "state", "state"),
    box: text,
    boxLabel,
    buttons,
    byAction,
    message,
  };
}

function decisionMessage(message, text) {
  message.textContent = text || "";
  message.hidden = !text;
}

// Wires a rendered widget to its model and draws it once: a change of a trait named in `redraw` calls
// its draw function; Python's reply to a decision, "decided" (the box is cleared) or `refusal`, calls
// `onReply()`, which ends the wait for it. Returns anywidget's clean-up.
function decisionWiring(model, { redraw, refusal, box, onReply, draw }) {
  const handlers = Object.entries(redraw).map(([trait, fn]) => [`change:${trait}`, fn]);
  const onMsg = (msg) => {
    if (msg && (msg.type === "decided" || msg.type === refusal)) {
      if (msg.type === "decided") box.value = "";
      onReply();
    }
  };
  for (const [name, fn] of handlers) model.on(name, fn);
  model.on("msg:custom", onMsg);
  draw();
  return () => {
    for (const [name, fn] of handlers) model.off(name, fn);
    model.off("msg:custom", onMsg);
  };
}
