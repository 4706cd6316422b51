// Generated from chatscopes.mjs by runtime/ws (TestClassicScriptInSync -update): do not edit.
// The classic-script form of the chat scopes client: ChatScopesClient, SessionBuilder,
// Session, ChatFailure and chatRoutesEndpoint become globals, as in Quarkus.
// chatscopes.mjs: the JavaScript client of chatgen's chat routes (runtime/ws).
//
// API-compatible with the Quarkus LangChain4j Chat Scopes client
// (ChatScopesClient, SessionBuilder, Session), plus: requests queued per
// session (each promise settles with its own terminator), Failed as a
// rejected promise with a ChatFailure carrying the reason, rejection of
// pending requests when the connection is lost, Session.close() (sends
// Disconnect), ChatScopesClient.close(), resuming a durable
// conversation on a new connection (SessionBuilder.resume), and, opted
// into with the reconnect option, replacing a lost connection by itself
// (resuming every session and re-sending the request whose answer was
// lost), with its state observed by onConnectionState, and stopping a
// request (an AbortSignal, Session.stop(), or an interrupting request:
// the server is sent a Cancel, and the request rejects with a ChatFailure
// whose reason is "Cancelled").
//
// The same code is served as a classic script at /_chat/javascript/chatscopes.js
// (the exports become globals) and as this module at
// /_chat/javascript/chatscopes.mjs, with TypeScript declarations at
// /_chat/javascript/chatscopes.d.ts.

/**
 * The websocket endpoint of the chat routes on the server that served the
 * page (ws: or wss: as the page's protocol). Pass a path if the routes are
 * mounted elsewhere.
 */
function chatRoutesEndpoint(path = "/_chat/routes") {
    const protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
    return protocol + "//" + window.location.host + path;
}

/**
 * The error a request's promise rejects with. Its message is the reason
 * sent by the server (as in Quarkus, where it is a plain Error), for
 * example "RouteNotFound", "SessionNotActive", "BadRequest", "Forbidden",
 * "ServerError", "ResumeRefused", "ConversationBusy", "Unavailable",
 * "Cancelled" (the request was stopped: see Session.stop), or, from the
 * client itself, "ConnectionLost", "ConnectionClosed" and "SessionClosed".
 */
class ChatFailure extends Error {
    constructor(reason, detail) {
        super(String(reason));
        this.name = "ChatFailure";
        this.reason = String(reason);
        if (detail !== undefined) {
            this.detail = detail;
        }
    }
}

/**
 * One conversation of a client, created by SessionBuilder.connect.
 * Requests (chat, sendData) are sent one at a time, in order: a request
 * waits for the terminator of the one before, so that it is sent with the
 * scope id current after it.
 */
class Session {
    constructor(builder, id) {
        this.client = builder.client;
        this.id = id;
        this.currentScope = undefined;
        this.closed = false;
        // A copy: sessions connected with one builder do not share handlers.
        this.eventHandlers = new Map(builder.eventHandlers);
        this.defaultHandler = builder._defaultHandler;
        this._queue = [];
        this._inflight = null;
        // Whether the server answered the session's Connect.
        this._started = false;
        // The failure that ended the session, when not a close.
        this._failure = null;
        this._resumeFailures = 0;
        this._resumeTimer = null;
        // On a server that keeps conversations: what resumes this one on a
        // new connection (SessionBuilder.resume). Undefined otherwise.
        this.conversationId = undefined;
        this.resumeToken = undefined;
    }

    /**
     * Sends the user's text; resolves with the scope id after the route
     * ran. options: { signal: an AbortSignal that stops the request,
     * interrupt: true to stop the pending requests first (see stop) rather
     * than wait behind them }.
     */
    chat(userMessage, options) {
        return this.sendData({ userMessage: userMessage }, options);
    }

    /** Sends data (its keys name route parameters); options as for chat. */
    sendData(data, options) {
        return this.sendEvent("ChatRouteMessage", data, options);
    }

    /** The same as sendData (the routes module types it per route). */
    send(data, options) {
        return this.sendData(data, options);
    }

    /** Sends a request of the given frame type with data; options as for chat. */
    sendEvent(type, data, options) {
        const req = { type: type, data: data };
        if (options && options.signal) {
            req.signal = options.signal;
        }
        if (options && options.interrupt === true) {
            req.interrupt = true;
        }
        return this._request(req);
    }

    /**
     * Stops the session's pending requests, the Stop button of a chat: the
     * one in flight is sent a Cancel (the server cancels its model call and
     * tools, and keeps the interrupted answer in the conversation's
     * memory), the queued ones are dropped; each rejects at once with a
     * ChatFailure whose reason is "Cancelled", and no event of theirs
     * reaches the handlers after that. The next request is sent once the
     * server answered the Cancel. Returns the number of requests stopped.
     */
    stop() {
        let n = 0;
        const queued = this._queue.filter((req) => req.type !== "Connect");
        this._queue = this._queue.filter((req) => req.type === "Connect");
        for (const req of queued) {
            this._settle(req);
            req.reject(new ChatFailure("Cancelled"));
            n++;
        }
        if (this._stopInflight()) {
            n++;
        }
        return n;
    }

    // Stops the request in flight, if any and not a Connect: it rejects
    // with "Cancelled", and a Cancel is sent; its frames are dropped until
    // its terminator, which sends the next request.
    _stopInflight() {
        const req = this._inflight;
        if (!req || req.type === "Connect" || req.stopped) {
            return false;
        }
        req.stopped = true;
        this._settle(req);
        req.reject(new ChatFailure("Cancelled"));
        this.client._transmit({ type: "Cancel", chatId: this.id, requestId: req.requestId });
        return true;
    }

    // Stops one request (its signal aborted): queued, it is dropped; in
    // flight, stopped.
    _stopRequest(req) {
        const i = this._queue.indexOf(req);
        if (i >= 0) {
            this._queue.splice(i, 1);
            this._settle(req);
            req.reject(new ChatFailure("Cancelled"));
        } else if (this._inflight === req) {
            this._stopInflight();
        }
    }

    // Stops listening to a request's signal.
    _settle(req) {
        if (req.signal && req.onAbort) {
            req.signal.removeEventListener("abort", req.onAbort);
            req.onAbort = undefined;
        }
    }

    /** The number of requests sent or queued and not yet settled. */
    get pending() {
        return this._queue.length + (this._inflight ? 1 : 0);
    }

    /**
     * Ends the session: sends Disconnect, which cancels the request running
     * on the server, and rejects the pending requests (queued or in
     * progress) with "SessionClosed". The server sends nothing for the
     * session after Disconnect.
     */
    close() {
        if (this.closed) {
            return;
        }
        this.closed = true;
        clearTimeout(this._resumeTimer);
        const pending = this._inflight && !this._inflight.stopped ? [this._inflight, ...this._queue] : this._queue;
        const connected = this.currentScope !== undefined || this._inflight;
        this._inflight = null;
        this._queue = [];
        if (this.client.sessions.get(this.id) === this) {
            this.client.sessions.delete(this.id);
        }
        for (const req of pending) {
            req.reject(new ChatFailure("SessionClosed"));
        }
        if (connected) {
            this.client._transmit({ type: "Disconnect", chatId: this.id });
        }
    }

    /** The same as close. */
    disconnect() {
        this.close();
    }

    _request(req) {
        return new Promise((resolve, reject) => {
            if (this.closed) {
                reject(this._failure ? new ChatFailure(this._failure.reason, this._failure.detail) : new ChatFailure("SessionClosed"));
                return;
            }
            if (req.signal && req.signal.aborted) {
                reject(new ChatFailure("Cancelled"));
                return;
            }
            req.resolve = resolve;
            req.reject = reject;
            if (req.signal) {
                req.onAbort = () => this._stopRequest(req);
                req.signal.addEventListener("abort", req.onAbort, { once: true });
            }
            if (req.interrupt) {
                this.stop();
            }
            this._queue.push(req);
            this._next();
        });
    }

    _next() {
        if (this._inflight || this._queue.length === 0 || this.client.state === "reconnecting") {
            return;
        }
        const req = this._queue.shift();
        if (req.requestId === undefined) {
            // A request sent again after a reconnect keeps its id and its
            // data as first sent: the server answers it from what it saved
            // if it ran it. The id is unique to this client (see
            // ChatScopesClient), so that the first request of a page that
            // resumes a conversation after a reload is never taken for
            // the one the page before it lost.
            req.requestId = this.client._requestIdPrefix + this.client._nextRequestId++;
            if (req.type !== "Connect" && req.data !== undefined) {
                try {
                    req.data = JSON.parse(JSON.stringify(req.data));
                } catch (e) {
                    req.reject(e); // not JSON (a cycle, a BigInt): nothing is sent
                    this._next();
                    return;
                }
            }
        }
        const frame = { type: req.type, chatId: this.id, requestId: req.requestId };
        if (req.type === "Connect") {
            if (req.resume) {
                frame.resume = req.resume;
            } else if (req.route !== undefined && req.route !== null) {
                frame.route = req.route;
            }
        } else {
            frame.scopeId = this.currentScope;
            frame.data = req.data;
        }
        this._inflight = req;
        req.pos = 0; // the events of its answer received since this send
        if (!this.client._transmit(frame)) {
            this._inflight = null;
            this._settle(req);
            req.reject(new ChatFailure(this.client.closed ? "ConnectionClosed" : "ConnectionLost"));
            this._next();
        }
    }

    _receive(message) {
        const type = message.type;
        const data = message.data;
        const req = this._inflight;
        if (req && req.stopped && (message.requestId === undefined || message.requestId === req.requestId)) {
            // A stopped request: it was reported (rejected) when stopped;
            // nothing of it reaches the handlers. Its terminator lets the
            // next request go.
            if (type === "Completed" || type === "Failed") {
                this._inflight = null;
                if (typeof message.scopeId === "string") {
                    this.currentScope = message.scopeId;
                } else if (type === "Completed" && typeof data === "string") {
                    this.currentScope = data;
                }
                this._next();
            }
            return;
        }
        if (type === "Completed" || type === "Failed") {
            this._terminate(message);
        } else if (!this._firstDelivery(message)) {
            return;
        }
        const handler = this.eventHandlers.get(type);
        try {
            if (handler) {
                handler(data, message, this);
            } else if (type === "Completed" || type === "Failed") {
                // settled above
            } else if (this.defaultHandler) {
                this.defaultHandler(type, data, message);
            } else {
                console.log("Handler not found for eventType: " + type);
            }
        } catch (e) {
            console.error("chatscopes: the " + type + " handler failed", e);
        }
    }

    // Whether an event of the request in flight goes to the handlers: not
    // when it is replayed (the request was sent again after a reconnect,
    // and the server answers it from what it saved) and the handlers had
    // it already, before the connection dropped. One answer, one delivery.
    _firstDelivery(message) {
        const req = this._inflight;
        if (!req || (message.requestId !== undefined && message.requestId !== req.requestId)) {
            return true;
        }
        if (message.replayed !== true && req.pos === 0) {
            req.delivered = 0; // the request runs (again): a new answer
        }
        req.pos++;
        if (message.replayed === true && req.pos <= (req.delivered || 0)) {
            return false;
        }
        req.delivered = req.pos;
        return true;
    }

    _terminate(message) {
        const req = this._inflight;
        if (!req || (message.requestId !== undefined && message.requestId !== req.requestId)) {
            if (this.client.debug) {
                console.log("chatscopes: a terminator matches no request", message);
            }
            return;
        }
        this._inflight = null;
        this._settle(req);
        if (req.resumed) {
            this._resumeAnswered(req, message);
            return;
        }
        if (message.type === "Completed") {
            if (req.type === "Connect") {
                this._started = true;
            }
            this.currentScope = message.data;
            if (typeof message.conversationId === "string" && typeof message.resumeToken === "string") {
                this.conversationId = message.conversationId;
                this.resumeToken = message.resumeToken;
            }
            req.resolve(req.type === "Connect" ? this : message.data);
        } else {
            if (typeof message.scopeId === "string") {
                this.currentScope = message.scopeId;
            }
            if (req.type === "Connect") {
                this.closed = true;
                this.client.sessions.delete(this.id);
            }
            req.reject(new ChatFailure(message.data, message.detail));
        }
        if (this.closed && this.client.sessions.get(this.id) === this) {
            this.client.sessions.delete(this.id);
        }
        this._next();
    }

    _fail(reason, detail) {
        const reqs = this._inflight && !this._inflight.stopped ? [this._inflight, ...this._queue] : this._queue;
        this._inflight = null;
        this._queue = [];
        this.closed = true;
        clearTimeout(this._resumeTimer);
        for (const req of reqs) {
            req.reject(new ChatFailure(reason, detail));
        }
    }

    // Whether the session can go on over a new connection: its server
    // keeps its conversation, or its Connect was not answered (it is sent
    // again).
    _resumable() {
        return !this.closed && (this.resumeToken !== undefined || !this._started);
    }

    // Arranges the queue for a new connection: a Connect resuming the
    // conversation first, then the request whose terminator was lost
    // (with its requestId), then the queued ones.
    _prepareResume() {
        if (this._inflight && !this._inflight.stopped) {
            // (A stopped request is not sent again: it was reported.)
            this._queue.unshift(this._inflight);
        }
        this._inflight = null;
        if (this._started) {
            this._queueResume();
        }
    }

    _queueResume() {
        if (this._queue.length > 0 && this._queue[0].resumed) {
            return;
        }
        this._queue.unshift({
            type: "Connect",
            resumed: true,
            resume: { conversationId: this.conversationId, token: this.resumeToken },
            resolve: () => {},
            reject: () => {},
        });
    }

    // Handles the terminator of the Connect that resumed the session after
    // a reconnect. ResumeRefused (or any reason but those worth a retry)
    // ends the session: its requests reject with that reason.
    _resumeAnswered(req, message) {
        if (message.type === "Completed") {
            this._resumeFailures = 0;
            if (typeof message.data === "string" && message.data !== "") {
                this.currentScope = message.data;
            }
            if (typeof message.resumeToken === "string") {
                this.resumeToken = message.resumeToken;
            }
            this._next();
            return;
        }
        const reason = String(message.data);
        this._resumeFailures++;
        const opts = this.client._reconnect;
        const retry = reason === "ConversationBusy" || reason === "Unavailable" || reason === "ShuttingDown";
        if (retry && opts && (opts.maxAttempts === 0 || this._resumeFailures < opts.maxAttempts)) {
            const delay = reconnectDelay(opts, this._resumeFailures - 1);
            this._resumeTimer = setTimeout(() => {
                if (this.closed) {
                    return;
                }
                this._queueResume();
                this._next();
            }, delay);
            return;
        }
        this._failure = { reason: reason, detail: message.detail };
        this._fail(reason, message.detail);
        if (this.client.sessions.get(this.id) === this) {
            this.client.sessions.delete(this.id);
        }
    }
}

// reconnectDelay returns the delay in ms before attempt n (0 for the
// first): doubling from minDelay to maxDelay, drawn at random between half
// of it and all of it, so that clients dropped together do not come back
// together.
function reconnectDelay(opts, n) {
    const d = n < 30 ? Math.min(opts.minDelay * 2 ** n, opts.maxDelay) : opts.maxDelay;
    return d / 2 + Math.random() * (d / 2);
}

// randomNonce returns 12 random bytes in hex (crypto.getRandomValues,
// which pages served over http have too; Math.random where there is none).
function randomNonce() {
    const bytes = new Uint8Array(12);
    const c = globalThis.crypto;
    if (c && typeof c.getRandomValues === "function") {
        c.getRandomValues(bytes);
    } else {
        for (let i = 0; i < bytes.length; i++) {
            bytes[i] = Math.floor(Math.random() * 256);
        }
    }
    let hex = "";
    for (const b of bytes) {
        hex += (b < 16 ? "0" : "") + b.toString(16);
    }
    return hex;
}

function reconnectOptions(o) {
    const opts = o === true || o === undefined || o === null ? {} : o;
    const minDelay = opts.minDelay > 0 ? Number(opts.minDelay) : 100;
    const maxDelay = Math.max(opts.maxDelay > 0 ? Number(opts.maxDelay) : 10000, minDelay);
    const maxAttempts = opts.maxAttempts > 0 ? Math.floor(opts.maxAttempts) : 0;
    return { minDelay: minDelay, maxDelay: maxDelay, maxAttempts: maxAttempts };
}

/**
 * A tool call waiting for the user's confirmation: the data of a Confirm
 * event, given to the handler set with SessionBuilder.confirmHandler. The
 * user's answer is the session's next request: approve() runs the call
 * (approve(editedArguments) with the arguments the user changed), deny()
 * tells the model the user refused it. Sending another message instead
 * denies it too. Both return the request's promise.
 */
class Confirmation {
    constructor(session, data) {
        this.session = session;
        this.id = data.id;
        this.tool = data.tool;
        this.arguments = data.arguments;
        this.callId = data.callId;
        this.agent = data.agent || "";
        this.agentSession = data.session || "";
    }

    /** Runs the call, with editedArguments (an object) if given. */
    approve(editedArguments) {
        const data = { confirm: this.id, approve: true };
        if (editedArguments !== undefined && editedArguments !== null) {
            data.arguments = editedArguments;
        }
        return this.session.sendData(data);
    }

    /** Refuses the call; the model is told, with reason if given. */
    deny(reason) {
        const data = { confirm: this.id, approve: false };
        if (reason !== undefined && reason !== null && reason !== "") {
            data.reason = String(reason);
        }
        return this.session.sendData(data);
    }

    /**
     * Stops the paused turn: the call gets a cancelled result, and the
     * request rejects with a ChatFailure "Cancelled".
     */
    cancel() {
        return this.session.sendData({ cancel: this.id });
    }
}

/**
 * A call of a tool the client runs (//chat:tool client): the data of a
 * ClientTool event, given to the handler set with
 * SessionBuilder.clientToolHandler (SessionBuilder.clientTool answers on
 * its own). The answer is the session's next request: respond(result)
 * gives the model the result (any JSON value), fail(reason) tells it the
 * client could not run the call (or the user refused), cancel() stops the
 * paused turn. Each returns the request's promise. deadline, when set, is
 * the Date after which the server no longer takes the result.
 */
class ClientToolCall {
    constructor(session, data) {
        this.session = session;
        this.id = data.id;
        this.tool = data.tool;
        this.arguments = data.arguments;
        this.callId = data.callId;
        this.agent = data.agent || "";
        this.agentSession = data.session || "";
        this.deadline = data.deadline ? new Date(data.deadline) : null;
    }

    /** Sends the call's result (a JSON value). */
    respond(result) {
        const data = { clientTool: this.id };
        if (result !== undefined) {
            data.result = result;
        }
        return this.session.sendData(data);
    }

    /** Tells the model that the client could not run the call. */
    fail(reason) {
        const text = reason === undefined || reason === null || String(reason) === "" ? "the client tool failed" : String(reason);
        return this.session.sendData({ clientTool: this.id, error: text });
    }

    /** Stops the paused turn (ChatFailure "Cancelled"). */
    cancel() {
        return this.session.sendData({ cancel: this.id });
    }
}

// runClientTool runs fn for call and answers with its result, its
// error's message, or a cancel when fn throws an AbortError from
// options.signal's abort by the caller. The signal aborts at the call's
// deadline.
async function runClientTool(call, fn) {
    const controller = new AbortController();
    let timer = null;
    if (call.deadline) {
        timer = setTimeout(() => controller.abort(new Error("the client did not finish in time")), Math.max(0, call.deadline.getTime() - Date.now()));
    }
    let answer;
    try {
        const result = await fn(call.arguments, { signal: controller.signal, call: call });
        answer = () => call.respond(result);
    } catch (e) {
        if (e && e.name === "AbortError" && !controller.signal.aborted) {
            answer = () => call.cancel();
        } else {
            answer = () => call.fail(controller.signal.aborted ? "the client did not finish in time" : (e && e.message) || String(e));
        }
    } finally {
        if (timer !== null) {
            clearTimeout(timer);
        }
    }
    return answer();
}

/**
 * Collects event handlers, then connects a session. A builder may connect
 * several sessions; each gets a copy of the handlers set so far.
 */
class SessionBuilder {
    constructor(client) {
        this.client = client;
        this.eventHandlers = new Map();
        this._defaultHandler = undefined;
        this.consoleHandler((message) => {
            console.log(message);
        });
        this.thinkingHandler((message) => {
            console.log(message);
        });
        this.eventHandlers.set("SystemError", (message) => {
            console.log("SystemError: " + message);
        });
        this.eventHandlers.set("Message", (message) => {
            console.log("Message: " + message);
        });
    }

    /**
     * Handles events of eventType: handler(data, frame). The frame is the
     * whole server frame, for its extensions: an event rendered from
     * markdown has frame.markdown (a Message, whose data is then HTML) or
     * frame.html (the Stream event that closes a rendered stream).
     */
    eventHandler(eventType, handler) {
        this.eventHandlers.set(eventType, handler);
        return this;
    }

    errorHandler(handler) {
        return this.eventHandler("Error", handler);
    }

    messageHandler(handler) {
        return this.eventHandler("Message", handler);
    }

    consoleHandler(handler) {
        return this.eventHandler("Console", handler);
    }

    thinkingHandler(handler) {
        return this.eventHandler("Thinking", handler);
    }

    streamHandler(handler) {
        return this.eventHandler("Stream", handler);
    }

    objectHandler(handler) {
        return this.eventHandler("Object", handler);
    }

    /**
     * Handles Confirm events: handler(confirmation, frame), where
     * confirmation is a Confirmation to approve() or deny().
     */
    confirmHandler(handler) {
        return this.eventHandler("Confirm", (data, frame, session) => {
            handler(new Confirmation(session, data), frame);
        });
    }

    /**
     * Handles ClientTool events: handler(call, frame), where call is a
     * ClientToolCall to respond(result), fail(reason) or cancel().
     */
    clientToolHandler(handler) {
        return this.eventHandler("ClientTool", (data, frame, session) => {
            handler(new ClientToolCall(session, data), frame);
        });
    }

    /**
     * Answers the calls of the client tool name on its own: fn(arguments,
     * { signal, call }) returns the result (or a promise of it), sent as
     * the session's next request, which resumes the paused turn; what it
     * throws is sent as the call's error, except an AbortError (the user
     * stopped it), which cancels the turn. signal aborts at the call's
     * deadline. Calls of other tools go to the handler set before.
     */
    clientTool(name, fn) {
        const previous = this.eventHandlers.get("ClientTool");
        return this.eventHandler("ClientTool", (data, frame, session) => {
            if (data && data.tool === name) {
                runClientTool(new ClientToolCall(session, data), fn).catch((e) => {
                    console.error("chatscopes: the answer of client tool " + name + " failed", e);
                });
            } else if (previous) {
                previous(data, frame, session);
            } else if (session.defaultHandler) {
                session.defaultHandler("ClientTool", data, frame);
            }
        });
    }

    /**
     * Handles Sources events: handler(sources, frame), where sources is
     * {query, sources: [{id, title, source, score}]}: the passages an AI
     * service's answer draws on, sent before the answer.
     */
    sourcesHandler(handler) {
        return this.eventHandler("Sources", handler);
    }

    /**
     * Handles Retract events: handler(retraction, frame), where retraction
     * is {reason}: an AI service's output guardrail withdrew the text the
     * request streamed so far ("rewrite", "reprompt", "fail" or "fatal"):
     * drop it from the page; the Stream chunks that follow replace it.
     */
    retractHandler(handler) {
        return this.eventHandler("Retract", handler);
    }

    /**
     * Handles Agent events: handler(agent, frame), where agent is
     * {name, from, back}: the conversation was handed off from the agent
     * from to the agent name (back: it returned to an agent that handed it
     * off before); the replies that follow are name's.
     */
    agentHandler(handler) {
        return this.eventHandler("Agent", handler);
    }

    /**
     * Handles Plan events: handler(plan, frame), where plan is {name,
     * description, expected_outcome, state, outcome, revision, subtasks:
     * [{name, description, expected_outcome, state, outcome}]}: the whole
     * plan an agent works through, sent each time it changes (revision
     * grows by one each time): show it in place of the one before.
     */
    planHandler(handler) {
        return this.eventHandler("Plan", handler);
    }

    /**
     * Handles SubAgent events: handler(step, frame), where step is {agent,
     * session, type, text, tool, id, arguments, failed}: one step of the
     * turn of a sub-agent a tool of the request runs (type "Thinking",
     * "Stream" or "Text" with text, "ToolCall" with tool, id and arguments,
     * "ToolResult" with tool, id and failed), tagged with the sub-agent.
     */
    subAgentHandler(handler) {
        return this.eventHandler("SubAgent", handler);
    }

    /** Handles events of every type without a handler: fn(type, data, frame). */
    defaultHandler(handler) {
        this._defaultHandler = handler;
        return this;
    }

    /**
     * Starts a session on route (omitted, undefined or null: the default
     * route). Resolves with the Session; rejects with a ChatFailure
     * ("RouteNotFound", ...).
     */
    connect(route) {
        return this._start({ type: "Connect", route: route });
    }

    /**
     * Resumes a conversation the server keeps (its session's
     * conversationId and resumeToken, saved before the connection was lost
     * or the page reloaded), on this client's connection, in the scope it
     * was in. Resolves with the Session, whose resumeToken is a new one
     * (the old one no longer works); rejects with a ChatFailure:
     * "ResumeRefused" (unknown, expired or ended conversation, wrong token:
     * start a new one), "ConversationBusy" (another server still serves it:
     * try again later), "Unavailable" (try again).
     */
    resume(conversationId, resumeToken) {
        return this._start({ type: "Connect", resume: { conversationId: String(conversationId), token: String(resumeToken) } });
    }

    _start(req) {
        const id = this.client.counter + "-" + Date.now();
        this.client.counter++;
        const session = new Session(this, id);
        this.client.sessions.set(id, session);
        return session._request(req);
    }
}

/**
 * A websocket connection to the chat routes, carrying any number of
 * sessions.
 *
 * new ChatScopesClient({ reconnect: true }) (or { reconnect: { minDelay,
 * maxDelay, maxAttempts } }, in ms; or client.autoReconnect(options)
 * before open) replaces a lost connection by itself, as the Go client
 * does with DialOptions.Reconnect: it dials again after a delay doubling
 * from minDelay (100) to maxDelay (10000) with jitter, resumes every
 * session whose server keeps conversations, and sends again, with the same
 * requestId, the request whose terminator it did not receive (the server
 * answers it from what it saved instead of running it twice). Requests
 * made meanwhile wait. A resume refused (ResumeRefused) ends its session:
 * its requests reject with that reason; ConversationBusy and Unavailable
 * are tried again with the same delays. Sessions of a server that keeps no
 * conversations reject their requests with "ConnectionLost". The close
 * handler is called only when the client ends for good (close(), or
 * maxAttempts failed dials in a row). Without the option, a lost
 * connection rejects every pending request with "ConnectionLost" and calls
 * the close handler, as in Quarkus.
 */
class ChatScopesClient {
    constructor(options) {
        this.sessions = new Map();
        this.counter = 0;
        this.websocket = null;
        this.closed = false;
        this.debug = false;
        /** "idle", "connecting", "connected", "reconnecting" or "closed". */
        this.state = "idle";
        // The requestIds of the client's requests: a random nonce of the
        // client and a counter. A server that keeps conversations takes
        // the first request after a resume with the id of the answer it
        // saved for a re-sent one: a new client (a reloaded page) must
        // not reuse the ids of another.
        this._requestIdPrefix = randomNonce() + "-";
        this._nextRequestId = 1;
        this._waiting = [];
        this._closeHandler = null;
        this._stateHandlers = [];
        this._reconnect = null;
        this._endpoint = undefined;
        this._redialTimer = null;
        if (options && options.reconnect) {
            this.autoReconnect(options.reconnect);
        }
    }

    /**
     * Makes the client replace a lost connection by itself (see the
     * class); options: { minDelay, maxDelay, maxAttempts } in ms, all
     * optional.
     */
    autoReconnect(options) {
        this._reconnect = reconnectOptions(options);
        return this;
    }

    /**
     * Calls handler(state, detail) when the connection's state changes:
     * "connecting" (open was called), "connected", "reconnecting" (the
     * connection was lost and is being replaced; detail is the close event)
     * and "closed" (for good; detail is the close event).
     */
    onConnectionState(handler) {
        this._stateHandlers.push(handler);
        return this;
    }

    /**
     * Opens the connection (default: chatRoutesEndpoint()). Resolves when
     * it is open; rejects with ChatFailure "ConnectionFailed" if it closes
     * first. Requests made before it is open are sent once it is.
     */
    open(endpoint = chatRoutesEndpoint()) {
        this._endpoint = endpoint;
        this.closed = false;
        this._setState("connecting");
        const ws = new WebSocket(endpoint);
        this.websocket = ws;
        return new Promise((resolve, reject) => {
            this._watch(ws, () => {
                const waiting = this._waiting;
                this._waiting = [];
                for (const text of waiting) {
                    ws.send(text);
                }
                this._setState("connected");
                resolve(this);
            }, (event) => {
                reject(new ChatFailure("ConnectionFailed", "websocket closed with code " + event.code));
                this._onClose(ws, event, false);
            });
        });
    }

    // _watch sets the handlers of websocket ws: opened when it opens,
    // failed when it closes before, _onClose when it closes after.
    _watch(ws, opened, failed) {
        let open = false;
        ws.onmessage = (event) => {
            if (ws === this.websocket) {
                this.onMessage(event);
            }
        };
        ws.addEventListener("open", () => {
            open = true;
            opened();
        });
        ws.addEventListener("close", (event) => {
            if (!open) {
                failed(event);
            } else {
                this._onClose(ws, event, true);
            }
        });
    }

    /**
     * Called with the close event when the connection closes (with the
     * reconnect option: when the client ends for good).
     */
    closeHandler(handler) {
        this._closeHandler = handler;
        return this;
    }

    onMessage(event) {
        let message;
        try {
            message = JSON.parse(event.data);
        } catch (e) {
            console.log("chatscopes: dropped a frame that is not JSON: " + event.data);
            return;
        }
        if (this.debug) {
            console.log("Received message: " + event.data);
        }
        const session = this.sessions.get(message.chatId);
        if (!session) {
            console.log("Session not found for chatId: " + message.chatId);
            return;
        }
        session._receive(message);
    }

    builder() {
        return new SessionBuilder(this);
    }

    /** Sends a frame (an object, sent as JSON). */
    send(message) {
        this.websocket.send(JSON.stringify(message));
    }

    /**
     * Ends every session (Disconnect) and closes the connection; pending
     * requests reject with "ConnectionClosed". Resolves once closed.
     */
    close() {
        this.closed = true;
        clearTimeout(this._redialTimer);
        for (const session of Array.from(this.sessions.values())) {
            session.close();
        }
        const ws = this.websocket;
        if (!ws || ws.readyState === WebSocket.CLOSED || this.state === "reconnecting") {
            if (ws && ws.readyState !== WebSocket.CLOSED) {
                ws.close(1000, "client closed");
            }
            this._finish({ code: 1000 });
            return Promise.resolve();
        }
        return new Promise((resolve) => {
            ws.addEventListener("close", () => resolve());
            ws.close(1000, "client closed");
        });
    }

    _setState(state, detail) {
        if (this.state === state) {
            return;
        }
        this.state = state;
        for (const handler of this._stateHandlers) {
            try {
                handler(state, detail);
            } catch (e) {
                console.error("chatscopes: a connection state handler failed", e);
            }
        }
    }

    _transmit(frame) {
        const ws = this.websocket;
        if (this.state === "reconnecting" || !ws || ws.readyState === WebSocket.CLOSING || ws.readyState === WebSocket.CLOSED) {
            return false;
        }
        const text = JSON.stringify(frame);
        if (this.debug) {
            console.log("Sending event: " + text);
        }
        if (ws.readyState === WebSocket.CONNECTING) {
            this._waiting.push(text);
        } else {
            ws.send(text);
        }
        return true;
    }

    // _onClose handles the close of websocket ws (wasOpen: after it
    // opened): it replaces it when the client reconnects, or ends the
    // client.
    _onClose(ws, event, wasOpen) {
        if (ws !== this.websocket || this.state === "closed") {
            return;
        }
        this._waiting = [];
        if (!this.closed && wasOpen && this._reconnect) {
            this._setState("reconnecting", event);
            for (const session of Array.from(this.sessions.values())) {
                if (!session._resumable()) {
                    session._fail("ConnectionLost");
                    this.sessions.delete(session.id);
                }
            }
            this._redial(0, event);
            return;
        }
        this._finish(event);
    }

    // _finish ends the client: the sessions left fail, the close handler
    // is called.
    _finish(event) {
        if (this.state === "closed") {
            return;
        }
        clearTimeout(this._redialTimer);
        const reason = this.closed ? "ConnectionClosed" : "ConnectionLost";
        for (const session of this.sessions.values()) {
            session._fail(reason);
        }
        this.sessions.clear();
        this._waiting = [];
        this._setState("closed", event);
        if (this._closeHandler) {
            this._closeHandler(event);
        } else if (!this.closed) {
            console.log("WebSocket connection closed");
        }
    }

    // _redial dials again after the delay of attempt n, then resumes the
    // sessions.
    _redial(n, event) {
        const opts = this._reconnect;
        if (opts.maxAttempts > 0 && n >= opts.maxAttempts) {
            this._finish(event);
            return;
        }
        this._redialTimer = setTimeout(() => {
            if (this.closed) {
                return;
            }
            const ws = new WebSocket(this._endpoint);
            this.websocket = ws;
            this._watch(ws, () => {
                if (this.closed) {
                    ws.close(1000, "client closed");
                    return;
                }
                // Before any session sends on the new connection: each
                // resuming Connect first, then the request whose
                // terminator was lost.
                for (const session of this.sessions.values()) {
                    session._prepareResume();
                }
                this._setState("connected");
                for (const session of Array.from(this.sessions.values())) {
                    session._next();
                }
            }, (ev) => {
                if (ws === this.websocket && !this.closed) {
                    this._redial(n + 1, ev);
                }
            });
        }, reconnectDelay(opts, n));
    }
}
