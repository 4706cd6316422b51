// The armorer's page: written against the Quarkus-compatible ChatScopesClient
// served by chatgen's websocket handler at /_chat/javascript/chatscopes.js.
(function () {
  "use strict";
  const log = document.getElementById("log");
  const form = document.getElementById("form");
  const input = document.getElementById("input");
  const send = document.getElementById("send");
  let streamEl = null;

  function add(cls, text) {
    const div = document.createElement("div");
    div.className = "msg " + cls;
    const span = document.createElement("span");
    span.textContent = text;
    div.appendChild(span);
    log.appendChild(div);
    log.scrollTop = log.scrollHeight;
    return span;
  }

  function weaponCard(w) {
    const card = document.getElementById("card");
    card.className = "card weapon";
    card.innerHTML = "";
    const name = document.createElement("div");
    name.className = "name";
    name.textContent = w.name || "Unnamed " + (w.kind || "weapon");
    card.appendChild(name);
    const stats = [["Kind", w.kind || "—"], ["Damage", w.damage || "—"]];
    if (w.enchantment) stats.push(["Enchantment", w.enchantment.element + " " + w.enchantment.power]);
    for (const [k, v] of stats) {
      const row = document.createElement("div");
      row.className = "stat";
      row.innerHTML = "<span></span><b></b>";
      row.children[0].textContent = k;
      row.children[1].textContent = v;
      card.appendChild(row);
    }
    if (w.saved) {
      const s = document.createElement("div");
      s.className = "saved";
      s.textContent = "✔ Saved to your armory";
      card.appendChild(s);
    }
  }

  function armorCard(a) {
    const card = document.getElementById("card");
    card.className = "card armor";
    card.textContent = (a.material || "—") + " " + (a.piece || "armour") + (a.saved ? " ✔ saved" : "");
  }

  function inventory(inv) {
    const ul = document.getElementById("armory");
    ul.innerHTML = "";
    const items = (inv.weapons || []).map(w => w.name + ", a " + w.kind + " (" + w.damage + " damage" + (w.enchantment ? ", " + w.enchantment.element + " " + w.enchantment.power : "") + ")")
      .concat((inv.armor || []).map(a => "a " + a.material + " " + a.piece));
    if (items.length === 0) {
      ul.innerHTML = '<li class="muted">Empty.</li>';
    }
    for (const text of items) {
      const li = document.createElement("li");
      li.textContent = text;
      ul.appendChild(li);
    }
    add("armorer", items.length ? "Here is your armory." : "Your armory is empty.");
  }

  function conversation(c) {
    const nav = document.getElementById("conversation");
    const crumbs = Array.from(nav.children).slice(0, c.depth);
    nav.innerHTML = "";
    for (const el of crumbs) nav.appendChild(el);
    const span = document.createElement("span");
    span.className = "crumb";
    span.textContent = c.name;
    nav.appendChild(span);
    add("system", "— " + c.name + " —");
  }

  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/_chat/routes";
  const client = new ChatScopesClient();
  client.open(url).then(function () {
    return client.builder()
      .messageHandler(function (m) { streamEl = null; add("armorer", m); })
      .thinkingHandler(function (m) { add("thinking", m); })
      .streamHandler(function (chunk) {
        if (!streamEl) streamEl = add("armorer", "");
        streamEl.textContent += chunk;
      })
      .errorHandler(function (m) { add("error", m); })
      .eventHandler("weapon", weaponCard)
      .eventHandler("armor", armorCard)
      .eventHandler("inventory", inventory)
      .eventHandler("conversation", conversation)
      .connect();
  }).then(function (session) {
    window.armorerSession = session;
    input.disabled = false;
    send.disabled = false;
    input.focus();
    add("system", "Connected. Try: I want to build a sword.");
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      input.value = "";
      streamEl = null;
      add("user", text);
      form.dataset.busy = String((Number(form.dataset.busy) || 0) + 1);
      session.chat(text)
        .catch(function (err) { add("error", "The request failed: " + err.message); })
        .finally(function () {
          const left = Number(form.dataset.busy) - 1;
          if (left > 0) form.dataset.busy = String(left); else delete form.dataset.busy;
        });
    });
  }).catch(function (err) {
    add("error", "Could not connect: " + (err && err.message ? err.message : err));
  });
})();
