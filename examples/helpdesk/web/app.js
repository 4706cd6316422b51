// The help desk's page: written against the ChatScopesClient served by
// chatgen's websocket handler at /_chat/javascript/chatscopes.js. It shows
// the answers, which agent answers (Agent events), the planner's plan as it
// changes (Plan events) and the steps of its sub-agents (SubAgent events).
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const log = $("log"), form = $("form"), input = $("input"), send = $("send");
  const agentEl = $("agent"), planEl = $("plan"), subEl = $("subagents");
  const endpoint = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/_chat/routes";
  let session = null;

  function line(kind, text) {
    const p = document.createElement("p");
    p.className = "line " + kind;
    p.textContent = text;
    log.appendChild(p);
    log.scrollTop = log.scrollHeight;
  }

  function onAgent(ev) {
    agentEl.textContent = ev.name;
    line("system", (ev.back ? ev.from + " hands you back to " : ev.from + " hands you to ") + ev.name + ".");
  }

  function onPlan(p) {
    planEl.className = "";
    planEl.textContent = "";
    const h = document.createElement("strong");
    h.textContent = p.name + " (" + p.state + ")";
    planEl.appendChild(h);
    const ol = document.createElement("ol");
    ol.start = 0;
    for (const s of p.subtasks || []) {
      const li = document.createElement("li");
      li.className = s.state;
      li.textContent = s.name + (s.outcome ? " — " + s.outcome : "");
      ol.appendChild(li);
    }
    planEl.appendChild(ol);
  }

  // onSubAgent shows a sub-agent's steps: a line per tool call and result,
  // and per session the text of its replies as it streams (sub-agents of a
  // fan-out stream at once, each into its own line).
  const streams = new Map();
  function onSubAgent(ev) {
    const key = ev.agent + "/" + (ev.session || "");
    if (ev.type === "Stream" || ev.type === "Text") {
      let li = streams.get(key);
      if (!li) {
        li = document.createElement("li");
        li.textContent = ev.agent + ": ";
        subEl.appendChild(li);
        streams.set(key, li);
      }
      li.textContent += ev.text || "";
      return;
    }
    streams.delete(key);
    const li = document.createElement("li");
    li.textContent = ev.agent + ": " + ev.type + (ev.tool ? " " + ev.tool : "") + (ev.failed ? " (failed)" : "") + (ev.text ? " " + ev.text : "");
    subEl.appendChild(li);
  }

  function setBusy(busy) {
    input.disabled = busy;
    send.disabled = busy;
    if (!busy) input.focus();
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || !session) return;
    input.value = "";
    line("user", "you: " + text);
    streams.clear(); // a new request: the sub-agents' replies start new lines
    setBusy(true);
    session.chat(text)
      .catch((err) => line("error", "The help desk could not answer: " + (err && err.reason ? err.reason : String(err))))
      .finally(() => setBusy(false));
  });

  const client = new ChatScopesClient();
  client.closeHandler(() => { line("error", "The connection was lost: reload the page."); setBusy(true); });
  client.open(endpoint)
    .then(() => client.builder()
      .messageHandler((m) => line("desk", m))
      .errorHandler((m) => line("error", String(m)))
      .agentHandler(onAgent)
      .planHandler(onPlan)
      .subAgentHandler(onSubAgent)
      .connect())
    .then((s) => {
      session = s;
      window.helpdeskSession = s; // for tests and the console
      line("system", "Connected to the help desk.");
      setBusy(false);
    })
    .catch((err) => line("error", "Could not connect: " + String(err)));
})();
