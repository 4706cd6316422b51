// The armorer's page: written against the Quarkus-compatible ChatScopesClient
// served by chatgen's websocket handler at /_chat/javascript/chatscopes.js.
//
// It shows the armorer's answers as they stream in, inserts the answers the
// server rendered from markdown (//chat:markdown: the frame says so) as HTML
// and everything else as text, says in sentences what went wrong, and when
// the connection is lost it says so, stops sending and reconnects by itself,
// waiting longer after each failed attempt. The server keeps conversations
// (docs/durability.md): the page keeps its conversation's id and resume
// token in sessionStorage and, on reconnecting (or reloading), resumes it
// where it was instead of starting a new one; after a reload it shows
// again what it showed of that conversation (kept in sessionStorage too).
// Under an answer drawn from the lore it lists the passages the armorer
// was given (Sources events). The armory is the forge's, shared by every
// tab and player: the page asks the server for it (GET armory) when it
// connects and when it comes back into view, and keeps it from the
// inventory events of its own conversation in between.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const log = $("log"), form = $("form"), input = $("input"), send = $("send");
  const banner = $("banner"), bannerText = $("banner-text"), retry = $("retry");
  const thinking = $("thinking"), thinkingText = $("thinking-text");
  const crumbs = $("crumbs");
  const stop = $("stop");

  const endpoint = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/_chat/routes";
  // The waits before reconnecting, in milliseconds; the last one repeats.
  const backoff = [500, 1000, 2000, 4000, 8000, 15000];
  const thinkingDefault = "The armorer is thinking…";

  const state = {
    client: null,   // the ChatScopesClient of the current connection
    session: null,  // the conversation, while connected
    attempt: 0,     // reconnection attempts since the last success
    timer: null,    // the pending reconnection
    connected: false,
    everConnected: false,
    busy: 0,        // requests sent and not yet settled
    names: ["Main menu"], // the conversations, outermost first
    streamEl: null, // the answer being streamed
    refocus: false, // the form had the focus when sending was disabled
    confirmEl: null, // the confirmation whose buttons are live
    cardKey: null,  // the armory key of the saved item on the card, if any
    sources: [],    // the passages of the answer being made (Sources events)
    conversationId: null, // the conversation the log shows, for its transcript
    inventories: 0, // the inventory events received: a fetched armory older than one is dropped
  };

  // What the player reads for each reason a request can fail (the server's
  // Failed reasons and the client's own): sentences, not codes.
  const failures = {
    RouteNotFound: "The armorer does not know that part of the forge. Reload the page to start over.",
    SessionNotActive: "That conversation had already ended, so a new one has started; please say it again.",
    BadRequest: "The armorer could not make sense of that request; try saying it another way.",
    Forbidden: "You are not allowed to do that at this forge.",
    ServerError: "The armorer could not reach the model; try again.",
    StreamingFailure: "The armorer's answer broke off before the end (the model stopped or could not be reached); try again.",
    TooManySessions: "Too many conversations are open on this connection; close another tab and reload.",
    TooManyRequests: "You are sending faster than the armorer can answer; wait for the answer, then try again.",
    ShuttingDown: "The forge is closing (the server is shutting down); the page will reconnect when it is back.",
    ConnectionLost: "The connection to the forge was lost before the armorer answered; your message may not have arrived.",
    ConnectionClosed: "The connection to the forge was closed.",
    ConnectionFailed: "The forge could not be reached.",
    SessionClosed: "That conversation was closed before the armorer answered.",
    Unavailable: "The forge could not record that turn (its store failed), so it did not happen; please say it again.",
  };

  // ---- the saved conversation (sessionStorage: per tab, gone with it)

  const savedKey = "weaponbuilder.conversation";

  function loadSaved() {
    try {
      const v = JSON.parse(sessionStorage.getItem(savedKey) || "null");
      return v && typeof v.id === "string" && typeof v.token === "string" ? v : null;
    } catch (e) {
      return null;
    }
  }

  function save() {
    const s = state.session;
    try {
      if (s && s.conversationId && s.resumeToken) {
        sessionStorage.setItem(savedKey, JSON.stringify({ id: s.conversationId, token: s.resumeToken, names: state.names }));
      }
    } catch (e) {
      // No storage (private mode): the page works, without resuming.
    }
  }

  function forget() {
    try {
      sessionStorage.removeItem(savedKey);
      sessionStorage.removeItem(transcriptKey);
    } catch (e) {
      // nothing to forget
    }
  }

  // ---- the transcript: what the log and the card showed, for a reload

  const transcriptKey = "weaponbuilder.transcript";
  const transcriptMax = 300; // the newest messages kept

  // saveTranscript keeps what the log and the card show, with the
  // conversation they belong to, in sessionStorage: the page that resumes
  // the conversation after a reload shows it again (restoreTranscript).
  // It is the page's own rendering (text as text, the server's safe HTML
  // as HTML), put back as it was.
  function saveTranscript() {
    if (!state.conversationId) return;
    const card = $("card");
    try {
      sessionStorage.setItem(transcriptKey, JSON.stringify({
        id: state.conversationId,
        log: Array.from(log.children).slice(-transcriptMax).map((el) => el.outerHTML).join(""),
        card: { className: card.className, html: card.innerHTML, key: state.cardKey },
      }));
    } catch (e) {
      // No storage, or full: a reload shows only what comes after it.
    }
  }

  // restoreTranscript shows the transcript saved for conversation id, if
  // any. Its confirmation buttons answer nothing any more, and an answer
  // the reload cut short is marked as cut.
  function restoreTranscript(id) {
    let t = null;
    try {
      t = JSON.parse(sessionStorage.getItem(transcriptKey) || "null");
    } catch (e) {
      t = null;
    }
    if (!t || t.id !== id || typeof t.log !== "string") return;
    log.innerHTML = t.log;
    for (const b of log.querySelectorAll("button")) b.disabled = true;
    for (const el of log.querySelectorAll(".streaming, [aria-busy]")) {
      el.classList.remove("streaming");
      el.removeAttribute("aria-busy");
      el.classList.add("cut");
    }
    if (t.card && typeof t.card.html === "string" && typeof t.card.className === "string") {
      const card = $("card");
      card.className = t.card.className;
      card.innerHTML = t.card.html;
      state.cardKey = typeof t.card.key === "string" ? t.card.key : null;
    }
    follow = true;
    toEnd();
  }

  function failureText(reason) {
    return failures[reason] || "Something went wrong at the forge (" + reason + "); try again.";
  }

  function reasonOf(err) {
    return err && err.reason ? err.reason : String(err && err.message ? err.message : err);
  }

  // ---- the log

  // The log follows what is added unless the player scrolled up to read.
  // A resize (a phone turned, a window narrowed) reflows it: a log that
  // followed keeps following, and the scrolling the reflow causes is not
  // taken for the player's.
  let follow = true;
  const sizeOf = () => log.clientWidth + "x" + log.clientHeight;
  let size = sizeOf();
  log.addEventListener("scroll", () => {
    if (sizeOf() !== size) return; // resized: the observer below decides
    follow = log.scrollHeight - log.scrollTop - log.clientHeight < 48;
  });
  new ResizeObserver(() => {
    size = sizeOf();
    toEnd();
  }).observe(log);

  function toEnd() {
    if (follow) log.scrollTop = log.scrollHeight;
  }

  function append(el) {
    log.appendChild(el);
    toEnd();
  }

  // line adds a line of text to the log.
  function line(cls, text) {
    const div = document.createElement("div");
    div.className = "msg " + cls;
    const span = document.createElement("span");
    span.className = "bubble";
    span.textContent = text;
    div.appendChild(span);
    append(div);
    return span;
  }

  // answer adds an empty answer of the armorer to the log.
  function answer() {
    const div = document.createElement("div");
    div.className = "msg armorer";
    const bubble = document.createElement("div");
    bubble.className = "bubble";
    div.appendChild(bubble);
    append(div);
    return bubble;
  }

  // onMessage shows a Message: HTML when the server rendered it from
  // markdown (the frame carries the source in "markdown"), else text.
  function onMessage(data, frame) {
    endStream();
    const bubble = answer();
    if (frame && typeof frame.markdown === "string") {
      bubble.innerHTML = data; // safe HTML, rendered and checked by the server
      bubble.classList.add("rendered");
    } else {
      bubble.textContent = String(data);
    }
    showSources(bubble);
  }

  // onStream shows the chunks of a streamed answer as they arrive, as text;
  // the Stream event that closes a markdown stream carries the whole answer
  // rendered, which replaces them.
  function onStream(chunk, frame) {
    if (frame && typeof frame.html === "string") {
      const bubble = state.streamEl || answer();
      bubble.innerHTML = frame.html;
      bubble.classList.add("rendered");
      showSources(bubble);
      endStream();
      toEnd();
      return;
    }
    if (!chunk) {
      return;
    }
    if (!state.streamEl) {
      state.streamEl = answer();
      state.streamEl.classList.add("streaming");
      state.streamEl.setAttribute("aria-busy", "true"); // announced once complete
      thinkingText.textContent = "The armorer is answering…";
    }
    state.streamEl.textContent += chunk;
    toEnd();
  }

  // endStream ends the answer being streamed; cut marks one that broke off.
  function endStream(cut) {
    if (state.streamEl) {
      if (cut) state.streamEl.classList.add("cut");
      state.streamEl.classList.remove("streaming");
      state.streamEl.removeAttribute("aria-busy");
      state.streamEl = null;
    }
  }

  function onThinking(text) {
    line("thinking", text);
    thinkingText.textContent = text;
  }

  // ---- sources: the passages an answer is drawn from

  // onSources keeps the passages of a search: the Sources event comes
  // before the answer it feeds, which shows them (showSources).
  function onSources(s) {
    for (const src of s && Array.isArray(s.sources) ? s.sources : []) {
      if (!state.sources.some((x) => x.id === src.id)) state.sources.push(src);
    }
  }

  // showSources lists, under the answer in bubble, the passages kept for
  // it: the title, the file and the relevance score of each, best first.
  function showSources(bubble) {
    if (state.sources.length === 0) return;
    const box = document.createElement("div");
    box.className = "sources";
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = "From the lore:";
    const list = document.createElement("ol");
    list.setAttribute("aria-label", "Sources of this answer");
    for (const src of state.sources) {
      const li = document.createElement("li");
      const title = document.createElement("cite");
      title.textContent = src.title || src.id;
      const file = document.createElement("span");
      file.className = "source";
      file.textContent = src.source || "";
      const score = document.createElement("span");
      score.className = "score";
      score.title = "relevance";
      score.textContent = Number(src.score).toFixed(2);
      li.append(title, " ", file, " ", score);
      list.appendChild(li);
    }
    box.append(label, " ", list);
    bubble.parentElement.appendChild(box);
    state.sources = [];
    toEnd();
  }

  // ---- the cards and the armory

  function weaponCard(w) {
    const card = $("card");
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
    state.cardKey = w.saved ? w.name : null;
    if (w.saved) {
      const s = document.createElement("div");
      s.className = "saved";
      s.textContent = "✔ Saved to your armory";
      card.appendChild(s);
    }
  }

  function armorCard(a) {
    const card = $("card");
    card.className = "card armor";
    card.textContent = (a.material || "—") + " " + (a.piece || "armour") + (a.saved ? " ✔ saved" : "");
    state.cardKey = a.saved ? a.material + " " + a.piece : null;
  }

  function emptyCard() {
    const card = $("card");
    card.className = "card empty";
    card.textContent = "Nothing yet.";
    state.cardKey = null;
  }

  // inventory keeps the armory list: it comes when the player asks, and
  // after every finished item (with latest naming it).
  function inventory(inv) {
    state.inventories++;
    const count = showArmory(inv);
    if (!inv.latest) {
      line("armorer", count ? "Here is your armory." : "Your armory is empty.");
    }
  }

  // loadArmory asks the server what the armory holds now, and shows it
  // unless an inventory event came meanwhile (it is as new).
  function loadArmory() {
    const seen = state.inventories;
    return fetch("armory", { cache: "no-store" })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status))))
      .then((inv) => {
        if (state.inventories === seen) showArmory(inv || {});
      })
      .catch(() => {
        // The panel keeps what it showed; the next connection asks again.
      });
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && state.connected) loadArmory();
  });

  // showArmory lists what inv holds in the armory panel, and returns how
  // many items that is.
  function showArmory(inv) {
    const ul = $("armory");
    ul.innerHTML = "";
    const items = (inv.weapons || []).map((w) => ({
      key: w.name,
      text: w.name + ", a " + w.kind + " (" + w.damage + " damage" + (w.enchantment ? ", " + w.enchantment.element + " " + w.enchantment.power : "") + ")",
    })).concat((inv.armor || []).map((a) => ({ key: a.material + " " + a.piece, text: "a " + a.material + " " + a.piece })));
    if (items.length === 0) {
      ul.innerHTML = '<li class="muted">Empty.</li>';
    }
    // The saved item on the card was deleted: it is no longer on the anvil.
    if (state.cardKey !== null && !items.some((item) => item.key === state.cardKey)) {
      emptyCard();
    }
    for (const item of items) {
      const li = document.createElement("li");
      li.textContent = item.text;
      if (inv.latest && item.key === inv.latest) li.className = "new";
      ul.appendChild(li);
    }
    return items.length;
  }

  // ---- where the player is: the breadcrumbs

  function conversation(c) {
    state.names = state.names.slice(0, c.depth);
    state.names[c.depth] = c.name;
    renderCrumbs();
    save();
    line("system", "— " + c.name + " —");
    if (c.depth > 0) {
      line("system hint", "Say “cancel” to leave the " + c.name + " without finishing (or choose " +
        state.names[c.depth - 1] + " above).");
    }
    showPlaceholder();
  }

  // showPlaceholder says in the message box what leaves a nested
  // conversation.
  function showPlaceholder() {
    input.placeholder = state.names.length > 1
      ? "Say something to the armorer… (“cancel” leaves the " + state.names[state.names.length - 1] + ")"
      : "Say something to the armorer…";
  }

  function renderCrumbs() {
    crumbs.innerHTML = "";
    state.names.forEach((name, depth) => {
      const li = document.createElement("li");
      if (depth === state.names.length - 1) {
        const span = document.createElement("span");
        span.className = "crumb current";
        span.setAttribute("aria-current", "step");
        span.textContent = name;
        li.appendChild(span);
      } else {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "crumb";
        b.textContent = name;
        b.title = "Go back to the " + name + " without finishing";
        b.disabled = !state.connected;
        b.addEventListener("click", () => goBack(depth));
        li.appendChild(b);
      }
      crumbs.appendChild(li);
    });
  }

  // goBack asks the armorer to leave the nested conversations down to the
  // one at depth, one at a time, with the cancel tools of the builder and
  // the enchanter; it stops when a request leaves the player where he was.
  async function goBack(depth) {
    const name = state.names[depth];
    while (state.session && state.names.length - 1 > depth) {
      const before = state.names.length;
      await say("Go back to the " + name + ", without finishing.");
      if (state.names.length >= before) break;
    }
    if (state.connected) input.focus();
  }

  // ---- confirmations

  // confirmText says in a sentence what the armorer wants to do.
  function confirmText(c) {
    const args = c.arguments || {};
    if (c.tool === "deleteItem" && typeof args.item === "string") {
      return "The armorer wants to delete " + args.item + " from your armory.";
    }
    return "The armorer wants to run " + c.tool + " " + JSON.stringify(args) + ".";
  }

  // onConfirm shows a tool call waiting for the player's confirmation with
  // Approve and Deny buttons; the click sends the answer. Sending a
  // message instead passes over the question (the server denies the call).
  function onConfirm(c) {
    endStream();
    closeConfirm();
    const div = document.createElement("div");
    div.className = "msg confirm";
    const bubble = document.createElement("div");
    bubble.className = "bubble";
    const text = document.createElement("span");
    text.textContent = confirmText(c) + " ";
    bubble.appendChild(text);
    const approve = document.createElement("button");
    approve.type = "button";
    approve.className = "approve";
    approve.textContent = "Approve";
    const deny = document.createElement("button");
    deny.type = "button";
    deny.className = "deny";
    deny.textContent = "Deny";
    bubble.append(approve, " ", deny);
    div.appendChild(bubble);
    append(div);
    state.confirmEl = div;
    const answerWith = (label, send) => {
      closeConfirm();
      follow = true;
      line("user", label);
      setBusy(+1);
      const session = state.session;
      return send()
        .catch((err) => failed(reasonOf(err), session))
        .finally(() => {
          endStream();
          state.sources = []; // an answer that never came shows no sources
          setBusy(-1);
          saveTranscript();
          if (state.connected) input.focus();
        });
    };
    approve.addEventListener("click", () => answerWith("Approve", () => c.approve()));
    deny.addEventListener("click", () => answerWith("Deny", () => c.deny("the player pressed Deny")));
    approve.focus();
  }

  // closeConfirm disables the buttons of the confirmation shown, if any.
  function closeConfirm() {
    if (state.confirmEl) {
      for (const b of state.confirmEl.querySelectorAll("button")) b.disabled = true;
      state.confirmEl = null;
    }
  }

  // ---- requests

  function setBusy(delta) {
    state.busy = Math.max(0, state.busy + delta);
    if (state.busy > 0) {
      form.dataset.busy = String(state.busy);
      thinking.hidden = false;
      stop.hidden = false; // while an answer is awaited or streams
    } else {
      delete form.dataset.busy;
      thinking.hidden = true;
      thinkingText.textContent = thinkingDefault;
      stop.hidden = true;
    }
  }

  // say sends the player's text and shows what happens to it.
  function say(text) {
    const session = state.session;
    if (!session) {
      return Promise.resolve();
    }
    if (banner.dataset.kind === "back") hideBanner();
    closeConfirm();
    endStream();
    follow = true; // the player's own message brings the log to its end
    line("user", text);
    setBusy(+1);
    return session.chat(text)
      .catch((err) => (reasonOf(err) === "Cancelled" ? stopped() : failed(reasonOf(err), session)))
      .finally(() => {
        endStream();
        state.sources = []; // an answer that never came shows no sources
        setBusy(-1);
        saveTranscript();
      });
  }

  // stopped marks the answer the player stopped: what was streamed stays,
  // as the armorer remembers it (interrupted), and it is not an error.
  function stopped() {
    const bubble = state.streamEl;
    endStream(true);
    if (bubble) bubble.classList.add("stopped");
    line("system", "— stopped —");
  }

  // The Stop button stops the answer in progress (and any message queued
  // behind it): the server cancels the model call and its tools.
  stop.addEventListener("click", () => {
    if (state.session) state.session.stop();
    input.focus();
  });

  function failed(reason, session) {
    endStream(true);
    line("error", failureText(reason));
    if (reason === "SessionNotActive" && session === state.session && state.client) {
      startSession(state.client, "A new conversation has started.");
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text || !state.session) return;
    input.value = "";
    say(text);
  });

  // ---- the connection

  function setConnected(on) {
    if (!on) {
      const f = document.activeElement;
      state.refocus = state.refocus || f === input || f === send;
    }
    state.connected = on;
    input.disabled = !on;
    send.disabled = !on;
    form.setAttribute("aria-disabled", String(!on));
    for (const b of crumbs.querySelectorAll("button")) b.disabled = !on;
    if (on && state.refocus) {
      state.refocus = false;
      input.focus();
    }
  }

  function showBanner(kind, text, withRetry) {
    banner.dataset.kind = kind;
    banner.hidden = false;
    bannerText.textContent = text;
    retry.hidden = !withRetry;
  }

  function hideBanner() {
    banner.hidden = true;
    delete banner.dataset.kind;
    retry.hidden = true;
  }

  function builder(client) {
    return client.builder()
      .messageHandler(onMessage)
      .thinkingHandler(onThinking)
      .streamHandler(onStream)
      .errorHandler((m) => line("error", String(m)))
      .eventHandler("weapon", weaponCard)
      .eventHandler("armor", armorCard)
      .eventHandler("inventory", inventory)
      .eventHandler("conversation", conversation)
      .sourcesHandler(onSources)
      .confirmHandler(onConfirm);
  }

  // open connects, then starts a conversation. A connection that closes
  // (or never opens) schedules the next attempt.
  function open() {
    clearTimeout(state.timer);
    state.timer = null;
    const client = new ChatScopesClient();
    state.client = client;
    client.closeHandler(() => {
      if (state.client === client) lost();
    });
    showBanner("connecting", state.everConnected ? "Reconnecting to the forge…" : "Connecting to the forge…", false);
    client.open(endpoint)
      .then(() => resumeOrStart(client))
      .catch((err) => {
        // A connection that never opened is handled by the close handler.
        if (state.client === client && reasonOf(err) !== "ConnectionFailed") {
          line("error", failureText(reasonOf(err)));
          client.close();
        }
      });
  }

  // resumeOrStart resumes the saved conversation, if there is one and the
  // server still has it, else starts a new one. A resume the server cannot
  // answer now (another server still serves the conversation, or its store
  // failed) closes the connection: the next attempt tries again.
  function resumeOrStart(client) {
    const saved = loadSaved();
    if (!saved) return startSession(client);
    return builder(client).resume(saved.id, saved.token).then((session) => {
      if (state.client !== client) {
        return;
      }
      state.session = session;
      window.armorerSession = session;
      if (!state.everConnected) restoreTranscript(saved.id); // a reload: the log is empty
      state.conversationId = saved.id;
      state.everConnected = true;
      state.attempt = 0;
      if (Array.isArray(saved.names) && saved.names.length > 0) state.names = saved.names.map(String);
      save(); // the token was rotated: the old one no longer works
      renderCrumbs();
      showPlaceholder();
      setConnected(true);
      showBanner("back", "Reconnected — continuing where you were.", false);
      line("system", "Reconnected — continuing where you were, in the " + state.names[state.names.length - 1] + ".");
      saveTranscript();
      loadArmory();
    }, (err) => {
      const reason = reasonOf(err);
      if (state.client !== client) return;
      if (reason === "ConversationBusy" || reason === "Unavailable") {
        client.close();
        return;
      }
      forget();
      return startSession(client);
    });
  }

  function startSession(client, why) {
    return builder(client).connect().then((session) => {
      if (state.client !== client) {
        session.close();
        return;
      }
      if (state.session) state.session.close();
      state.session = session;
      window.armorerSession = session; // for tests and the console
      const again = state.everConnected;
      state.names = ["Main menu"];
      save();
      state.everConnected = true;
      state.attempt = 0;
      state.names = ["Main menu"];
      state.conversationId = session.conversationId || null;
      renderCrumbs();
      showPlaceholder();
      emptyCard();
      setConnected(true);
      if (why) {
        line("system", why);
      } else if (again) {
        showBanner("back", "Back online. The earlier conversation could not be resumed, so this is a new one, at the main menu.", false);
        line("system", "Reconnected: a new conversation has started at the main menu.");
      } else {
        hideBanner();
        line("system", "Connected. Try: I want to build a sword. Or ask: who forged Dawnbreaker?");
      }
      saveTranscript();
      loadArmory();
    });
  }

  function lost() {
    const wasOnline = state.session !== null;
    state.session = null;
    window.armorerSession = null;
    setConnected(false);
    endStream(true);
    setBusy(-state.busy); // nothing is pending any more: the indicator goes
    if (wasOnline) line("system", "The connection to the forge was lost.");
    const wait = backoff[Math.min(state.attempt, backoff.length - 1)] * (1 + 0.2 * Math.random());
    state.attempt++;
    showBanner("lost", "The connection to the forge was lost. Sending is paused; trying again in " + Math.max(1, Math.round(wait / 1000)) + " s…", true);
    clearTimeout(state.timer);
    state.timer = setTimeout(open, wait);
  }

  // A reload or a navigation away keeps what the log shows, even mid-answer.
  window.addEventListener("pagehide", saveTranscript);

  retry.addEventListener("click", () => {
    state.refocus = true;
    open();
  });

  // For tests and the console.
  window.armorer = { failureText: failureText, failures: Object.keys(failures), state: state };

  open();
})();
