// chatscopes.mjs: the JavaScript client of chatgen's chat routes (runtime/ws).
//
// API-compatible with the Quarkus LangChain4j Chat Scopes client
// (ChatScopesClient, SessionBuilder, Session), plus: requests queued per
// session (each promise settles with its own terminator), Failed as a
// rejected promise with a ChatFailure carrying the reason, rejection of
// pending requests when the connection is lost, Session.close() (sends
// Disconnect), ChatScopesClient.close(), and resuming a durable
// conversation on a new connection (SessionBuilder.resume).
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
export function chatRoutesEndpoint(path = "/_chat/routes") {
    const protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
    return protocol + "//" + window.location.host + path;
}

/**
 * The error a request's promise rejects with. Its message is the reason
 * sent by the server (as in Quarkus, where it is a plain Error), for
 * example "RouteNotFound", "SessionNotActive", "BadRequest", "Forbidden",
 * "ServerError", "ResumeRefused", "ConversationBusy", "Unavailable", or,
 * from the client itself, "ConnectionLost",
 * "ConnectionClosed" and "SessionClosed".
 */
export class ChatFailure extends Error {
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
export class Session {
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
        // On a server that keeps conversations: what resumes this one on a
        // new connection (SessionBuilder.resume). Undefined otherwise.
        this.conversationId = undefined;
        this.resumeToken = undefined;
    }

    /** Sends the user's text; resolves with the scope id after the route ran. */
    chat(userMessage) {
        return this.sendData({ userMessage: userMessage });
    }

    /** Sends data (its keys name route parameters). */
    sendData(data) {
        return this.sendEvent("ChatRouteMessage", data);
    }

    /** The same as sendData (the routes module types it per route). */
    send(data) {
        return this.sendData(data);
    }

    /** Sends a request of the given frame type with data. */
    sendEvent(type, data) {
        return this._request({ type: type, data: data });
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
        const pending = this._inflight ? [this._inflight, ...this._queue] : this._queue;
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
                reject(new ChatFailure("SessionClosed"));
                return;
            }
            req.resolve = resolve;
            req.reject = reject;
            this._queue.push(req);
            this._next();
        });
    }

    _next() {
        if (this._inflight || this._queue.length === 0) {
            return;
        }
        const req = this._queue.shift();
        req.requestId = this.client._nextRequestId++;
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
        if (!this.client._transmit(frame)) {
            this._inflight = null;
            req.reject(new ChatFailure(this.client.closed ? "ConnectionClosed" : "ConnectionLost"));
            this._next();
        }
    }

    _receive(message) {
        const type = message.type;
        const data = message.data;
        if (type === "Completed" || type === "Failed") {
            this._terminate(message);
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

    _terminate(message) {
        const req = this._inflight;
        if (!req || (message.requestId !== undefined && message.requestId !== req.requestId)) {
            if (this.client.debug) {
                console.log("chatscopes: a terminator matches no request", message);
            }
            return;
        }
        this._inflight = null;
        if (message.type === "Completed") {
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

    _fail(reason) {
        const reqs = this._inflight ? [this._inflight, ...this._queue] : this._queue;
        this._inflight = null;
        this._queue = [];
        this.closed = true;
        for (const req of reqs) {
            req.reject(new ChatFailure(reason));
        }
    }
}

/**
 * A tool call waiting for the user's confirmation: the data of a Confirm
 * event, given to the handler set with SessionBuilder.confirmHandler. The
 * user's answer is the session's next request: approve() runs the call
 * (approve(editedArguments) with the arguments the user changed), deny()
 * tells the model the user refused it. Sending another message instead
 * denies it too. Both return the request's promise.
 */
export class Confirmation {
    constructor(session, data) {
        this.session = session;
        this.id = data.id;
        this.tool = data.tool;
        this.arguments = data.arguments;
        this.callId = data.callId;
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
}

/**
 * Collects event handlers, then connects a session. A builder may connect
 * several sessions; each gets a copy of the handlers set so far.
 */
export class SessionBuilder {
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

/** A websocket connection to the chat routes, carrying any number of sessions. */
export class ChatScopesClient {
    constructor() {
        this.sessions = new Map();
        this.counter = 0;
        this.websocket = null;
        this.closed = false;
        this.debug = false;
        this._nextRequestId = 1;
        this._waiting = [];
        this._closeHandler = null;
        this._closedOnce = false;
    }

    /**
     * Opens the connection (default: chatRoutesEndpoint()). Resolves when
     * it is open; rejects with ChatFailure "ConnectionFailed" if it closes
     * first. Requests made before it is open are sent once it is.
     */
    open(endpoint = chatRoutesEndpoint()) {
        const ws = new WebSocket(endpoint);
        this.websocket = ws;
        this.closed = false;
        this._closedOnce = false;
        ws.onmessage = (event) => {
            this.onMessage(event);
        };
        return new Promise((resolve, reject) => {
            let opened = false;
            ws.addEventListener("open", () => {
                opened = true;
                const waiting = this._waiting;
                this._waiting = [];
                for (const text of waiting) {
                    ws.send(text);
                }
                resolve(this);
            });
            ws.addEventListener("close", (event) => {
                if (!opened) {
                    reject(new ChatFailure("ConnectionFailed", "websocket closed with code " + event.code));
                }
                this._onClose(event);
            });
        });
    }

    /** Called with the close event when the connection closes. */
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
        for (const session of Array.from(this.sessions.values())) {
            session.close();
        }
        const ws = this.websocket;
        if (!ws || ws.readyState === WebSocket.CLOSED) {
            this._onClose({ code: 1000 });
            return Promise.resolve();
        }
        return new Promise((resolve) => {
            ws.addEventListener("close", () => resolve());
            ws.close(1000, "client closed");
        });
    }

    _transmit(frame) {
        const ws = this.websocket;
        if (!ws || ws.readyState === WebSocket.CLOSING || ws.readyState === WebSocket.CLOSED) {
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

    _onClose(event) {
        if (this._closedOnce) {
            return;
        }
        this._closedOnce = true;
        const reason = this.closed ? "ConnectionClosed" : "ConnectionLost";
        for (const session of this.sessions.values()) {
            session._fail(reason);
        }
        this.sessions.clear();
        this._waiting = [];
        if (this._closeHandler) {
            this._closeHandler(event);
        } else if (!this.closed) {
            console.log("WebSocket connection closed");
        }
    }
}
