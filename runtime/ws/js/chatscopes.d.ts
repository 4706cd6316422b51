// TypeScript declarations of chatscopes.mjs, the JavaScript client of
// chatgen's chat routes (served at /_chat/javascript/chatscopes.d.ts).

/** The data of an event: any JSON value. */
export type EventData = any;

/** A frame the server sends: an event of a session, or a terminator. */
export interface ServerFrame {
    chatId: string;
    type: string;
    data: EventData;
    /** The requestId of the request the frame answers, as the client sent it (this client sends strings unique to the client). */
    requestId?: string | number;
    scopeId?: string;
    detail?: string;
    /** On the Completed of a Connect, on a server that keeps conversations. */
    conversationId?: string;
    /** With conversationId: the token that resumes the conversation. */
    resumeToken?: string;
    /** On the frames (events and terminator) of an answer replayed for a request sent again after a resume; the client skips the replayed events it delivered before the connection dropped. */
    replayed?: boolean;
    /**
     * On a Message rendered from markdown (//chat:markdown): the markdown
     * source; data is then its safe HTML.
     */
    markdown?: string;
    /**
     * On the Stream event (with data "") that closes a stream rendered from
     * markdown: the whole streamed answer as safe HTML.
     */
    html?: string;
}

/**
 * A handler of one event type; frame is the whole server frame, session
 * the session it came on.
 */
export type EventHandler = (data: EventData, frame: ServerFrame, session: Session) => void;

/**
 * A tool call waiting for the user's confirmation (a Confirm event). The
 * user's answer is the session's next request; sending another message
 * instead denies the call.
 */
export class Confirmation {
    constructor(session: Session, data: { id: string; tool: string; arguments: unknown; callId: string; agent?: string; session?: string });
    readonly session: Session;
    /** The confirmation id the answer names. */
    readonly id: string;
    /** The tool's name. */
    readonly tool: string;
    /** The model's arguments (a JSON value, normally an object). */
    readonly arguments: any;
    /** The model's id of the tool call. */
    readonly callId: string;
    /** The sub-agent whose turn made the call; "" for the top-level turn's. */
    readonly agent: string;
    /** The sub-agent's session (the data's "session"); "" for the top-level turn's. */
    readonly agentSession: string;
    /** Runs the call, with editedArguments if given; resolves like chat. */
    approve(editedArguments?: Record<string, unknown>): Promise<string>;
    /** Refuses the call; the model is told, with reason if given. */
    deny(reason?: string): Promise<string>;
    /** Stops the paused turn: the request rejects with ChatFailure "Cancelled". */
    cancel(): Promise<string>;
}

/**
 * A call of a tool the client runs (//chat:tool client): the data of a
 * ClientTool event. The answer is the session's next request: respond()
 * gives the model the result, fail() tells it the client could not run
 * the call, cancel() stops the paused turn.
 */
export class ClientToolCall<A = any> {
    constructor(session: Session, data: { id: string; tool: string; arguments: A; callId: string; deadline?: string; agent?: string; session?: string });
    readonly session: Session;
    /** The id the answer names. */
    readonly id: string;
    /** The tool's name. */
    readonly tool: string;
    /** The model's arguments. */
    readonly arguments: A;
    /** The model's id of the tool call. */
    readonly callId: string;
    /** The sub-agent whose turn made the call; "" for the top-level turn's. */
    readonly agent: string;
    /** The sub-agent's session (the data's "session"); "" for the top-level turn's. */
    readonly agentSession: string;
    /** When the server stops taking the result; null: no deadline. */
    readonly deadline: Date | null;
    /** Sends the call's result (any JSON value); resolves like chat. */
    respond(result: unknown): Promise<string>;
    /** Tells the model the client could not run the call. */
    fail(reason?: string): Promise<string>;
    /** Stops the paused turn: the request rejects with ChatFailure "Cancelled". */
    cancel(): Promise<string>;
}

/** Runs a client tool: returns its result; throwing an AbortError cancels the turn. */
export type ClientToolFunction<A = any> = (arguments_: A, options: { signal: AbortSignal; call: ClientToolCall<A> }) => unknown | Promise<unknown>;

/** A handler of events without a handler of their own. */
export type DefaultHandler = (eventType: string, data: EventData, frame: ServerFrame) => void;

/**
 * The websocket endpoint of the chat routes on the server that served the
 * page. Pass a path if the routes are mounted elsewhere.
 */
export function chatRoutesEndpoint(path?: string): string;

/**
 * The error a request's promise rejects with: message and reason are the
 * reason sent by the server ("RouteNotFound", "SessionNotActive",
 * "BadRequest", "Forbidden", "ServerError", "StreamingFailure",
 * "TooManySessions", "TooManyRequests", "ShuttingDown", "ResumeRefused",
 * "ConversationBusy", "Unavailable", "Cancelled": the request was stopped,
 * by Session.stop, its signal or an interrupting request) or set by the
 * client ("ConnectionLost", "ConnectionClosed", "ConnectionFailed",
 * "SessionClosed").
 */
export class ChatFailure extends Error {
    constructor(reason: string, detail?: string);
    readonly name: "ChatFailure";
    readonly reason: string;
    /** A human-readable explanation, for protocol errors. */
    readonly detail?: string;
}

/** The options of a request (Session.chat, sendData, send, sendEvent). */
export interface RequestOptions {
    /**
     * Stops the request when aborted, as Session.stop does for it: a
     * Cancel is sent (or, queued, it is not sent) and the promise rejects
     * with a ChatFailure whose reason is "Cancelled".
     */
    signal?: AbortSignal;
    /**
     * Steer: stop the session's pending requests first (see Session.stop)
     * and be answered next, with the interrupted turn in the
     * conversation's memory, rather than wait behind them (the default).
     */
    interrupt?: boolean;
}

/** One conversation of a client. */
export class Session {
    /** The client the session runs on. */
    readonly client: ChatScopesClient;
    /** The chatId of the session on its connection. */
    readonly id: string;
    /** The id of the scope the session is in (updated by every terminator). */
    currentScope: string | undefined;
    /**
     * Whether the session was closed or lost. With the reconnect option, a
     * session whose resume the server refused is closed, and its requests
     * reject with that reason ("ResumeRefused").
     */
    readonly closed: boolean;
    /** The session's handlers, by event type. */
    readonly eventHandlers: Map<string, EventHandler>;
    /** The handler of events without a handler of their own. */
    defaultHandler: DefaultHandler | undefined;
    /** The number of requests sent or queued and not yet settled. */
    readonly pending: number;
    /**
     * On a server that keeps conversations (docs/durability.md): the id of
     * the conversation, to resume it with SessionBuilder.resume.
     */
    readonly conversationId: string | undefined;
    /** With conversationId: the current resume token (rotated on resume). */
    readonly resumeToken: string | undefined;

    /** Sends the user's text; resolves with the scope id after the route ran. */
    chat(userMessage: string, options?: RequestOptions): Promise<string>;
    /** Sends data whose keys name route parameters. */
    sendData(data: Record<string, unknown>, options?: RequestOptions): Promise<string>;
    /** The same as sendData (routes.d.ts types it per route). */
    send(data: Record<string, unknown>, options?: RequestOptions): Promise<string>;
    /** Sends a request of the given frame type with data. */
    sendEvent(type: string, data: Record<string, unknown>, options?: RequestOptions): Promise<string>;
    /**
     * Stops the pending requests (the Stop button): the one in flight is
     * sent a Cancel (the server cancels its model call and tools and keeps
     * the interrupted answer in memory), the queued ones are dropped; each
     * rejects at once with a ChatFailure whose reason is "Cancelled", and
     * none of their events reaches the handlers after that. Returns how
     * many were stopped.
     */
    stop(): number;
    /**
     * Ends the session (Disconnect, which cancels the request running on the
     * server); pending requests, queued or in progress, reject with "SessionClosed".
     */
    close(): void;
    /** The same as close. */
    disconnect(): void;
}

/**
 * The data of a Sources event: the passages an AI service's answer draws on
 * (what was searched for, and each passage's id, title, source and score),
 * best first.
 */
export interface Sources {
    query: string;
    sources: { id: string; title?: string; source?: string; score: number }[];
}

/**
 * The data of a Retract event: an AI service's output guardrail withdrew
 * the text the request streamed so far, for the reason given.
 */
export interface Retraction {
    reason: "rewrite" | "reprompt" | "fail" | "fatal";
}

/**
 * The data of an Agent event: the conversation was handed off from the
 * agent from to the agent name (back: it returned to an agent that handed
 * it off before); the replies that follow are name's.
 */
export interface AgentHandoff {
    name: string;
    from: string;
    back?: boolean;
}

/** The state of a plan's subtask. */
export type SubtaskState = "todo" | "in_progress" | "done" | "abandoned";

/** One subtask of a Plan. */
export interface PlanSubtask {
    name: string;
    description?: string;
    expected_outcome?: string;
    state: SubtaskState;
    outcome?: string;
}

/**
 * The data of a Plan event: the whole plan an agent works through, sent
 * each time it changes (revision grows by one each time).
 */
export interface Plan {
    name: string;
    description: string;
    expected_outcome?: string;
    state: "in_progress" | "done" | "abandoned";
    outcome?: string;
    revision: number;
    subtasks: PlanSubtask[];
}

/**
 * The data of a SubAgent event: one step of the turn of a sub-agent a tool
 * of the request runs, tagged with the sub-agent (agent) and the
 * sub-conversation it continues (session).
 */
export interface SubAgentStep {
    agent: string;
    session?: string;
    /**
     * What happened: "Thinking", "Stream" or "Text" (text), "ToolCall"
     * (tool, id, arguments) or "ToolResult" (tool, id, failed).
     */
    type: "Thinking" | "Stream" | "Text" | "ToolCall" | "ToolResult";
    text?: string;
    tool?: string;
    id?: string;
    arguments?: string;
    failed?: boolean;
}

/** Collects event handlers, then connects sessions. */
export class SessionBuilder {
    constructor(client: ChatScopesClient);
    readonly client: ChatScopesClient;
    readonly eventHandlers: Map<string, EventHandler>;

    eventHandler(eventType: string, handler: EventHandler): this;
    errorHandler(handler: EventHandler): this;
    messageHandler(handler: EventHandler): this;
    consoleHandler(handler: EventHandler): this;
    thinkingHandler(handler: EventHandler): this;
    streamHandler(handler: EventHandler): this;
    objectHandler(handler: EventHandler): this;
    /** Handles Confirm events: a tool call waiting for the user's confirmation. */
    confirmHandler(handler: (confirmation: Confirmation, frame: ServerFrame) => void): this;
    /** Handles ClientTool events: a call of a tool the client runs, to answer. */
    clientToolHandler(handler: (call: ClientToolCall, frame: ServerFrame) => void): this;
    /** Answers the calls of the client tool name with fn's result, on its own. */
    clientTool<A = any>(name: string, fn: ClientToolFunction<A>): this;
    /** Handles Sources events: the passages an AI service's answer draws on. */
    sourcesHandler(handler: (sources: Sources, frame: ServerFrame) => void): this;
    /**
     * Handles Retract events: drop the Stream chunks of the request shown so
     * far; the chunks that follow replace them.
     */
    retractHandler(handler: (retraction: Retraction, frame: ServerFrame) => void): this;
    /** Handles Agent events: a hand-off to another agent. */
    agentHandler(handler: (agent: AgentHandoff, frame: ServerFrame) => void): this;
    /** Handles Plan events: the whole plan, each time it changes. */
    planHandler(handler: (plan: Plan, frame: ServerFrame) => void): this;
    /** Handles SubAgent events: one step of a sub-agent's turn. */
    subAgentHandler(handler: (step: SubAgentStep, frame: ServerFrame) => void): this;
    defaultHandler(handler: DefaultHandler): this;
    /** Starts a session on route (omitted or null: the default route). */
    connect(route?: string | null): Promise<Session>;
    /**
     * Resumes a conversation the server keeps, in the scope it was in, with
     * a session's conversationId and resumeToken. Rejects with
     * "ResumeRefused" (start a new conversation), "ConversationBusy" or
     * "Unavailable" (try again later).
     */
    resume(conversationId: string, resumeToken: string): Promise<Session>;
}

/**
 * How a client replaces a lost connection (ChatScopesClient's reconnect
 * option). Delays are in milliseconds.
 */
export interface ReconnectOptions {
    /** The first delay (default 100); it doubles on each failed attempt. */
    minDelay?: number;
    /** Bounds the delay (default 10000). Each delay is drawn at random between half of it and all of it. */
    maxDelay?: number;
    /** Failed attempts in a row after which the client gives up (default 0: never; close stops it). */
    maxAttempts?: number;
}

/** The options of a ChatScopesClient. */
export interface ChatScopesClientOptions {
    /**
     * Replace a lost connection by itself: dial again with backoff and
     * jitter, resume every session whose server keeps conversations, and
     * send again, with its requestId, the request whose answer was lost.
     * Off by default (a lost connection then rejects what is pending with
     * "ConnectionLost", as in Quarkus).
     */
    reconnect?: boolean | ReconnectOptions;
}

/**
 * The state of a client's connection: "idle" (before open), "connecting",
 * "connected", "reconnecting" (lost, being replaced; requests wait) and
 * "closed" (for good).
 */
export type ConnectionState = "idle" | "connecting" | "connected" | "reconnecting" | "closed";

/** A websocket connection to the chat routes, carrying any number of sessions. */
export class ChatScopesClient {
    constructor(options?: ChatScopesClientOptions);
    /** The state of the connection. */
    readonly state: ConnectionState;
    /** Turns the reconnect option on (before open); see ChatScopesClientOptions. */
    autoReconnect(options?: boolean | ReconnectOptions): this;
    /**
     * Calls handler on every change of state; detail is the close event
     * for "reconnecting" and "closed".
     */
    onConnectionState(handler: (state: ConnectionState, detail?: CloseEvent | { code: number }) => void): this;
    /** The sessions of the client, by chatId. */
    readonly sessions: Map<string, Session>;
    /** The websocket, once open was called. */
    websocket: WebSocket | null;
    /** Whether close was called. */
    readonly closed: boolean;
    /** Log every frame to the console. */
    debug: boolean;

    /** Opens the connection (default: chatRoutesEndpoint()). */
    open(endpoint?: string): Promise<this>;
    /**
     * Sets the handler called with the close event when the connection
     * closes (with the reconnect option: when the client ends for good).
     */
    closeHandler(handler: (event: CloseEvent | { code: number }) => void): this;
    /** A builder for a new session. */
    builder(): SessionBuilder;
    /** Sends a raw frame as JSON. */
    send(message: object): void;
    /** Ends every session and closes the connection. */
    close(): Promise<void>;
    /** Handles one websocket message (called by the websocket). */
    onMessage(event: MessageEvent): void;
}
