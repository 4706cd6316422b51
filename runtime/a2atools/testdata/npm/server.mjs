// An A2A 1.0 agent served by @a2a-js/sdk's own Express handlers (its
// DefaultRequestHandler, jsonRpcHandler and agentCardHandler), for the
// tests of runtime/a2atools. It listens on 127.0.0.1 on a free port and
// prints "listening <base URL>". What it answers depends on the message:
//
//   "ask ..."   the task asks "Which metal?" (input-required); the next
//               message on the task completes it with "forging <answer>".
//   "slow"      says it is working, then answers after 5 s, unless the
//               task is cancelled first.
//   "fail"      the task fails with "the anvil cracked".
//   "huge"      an artifact of 300,000 bytes.
//   "say ..."   a message (no task): "you said ...".
//   anything    a working status "heating", two chunks of an artifact and
//               "message N of this context: <text>" as the final status.
import express from "express";
import { AGENT_CARD_PATH, TaskState, Role } from "@a2a-js/sdk";
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from "@a2a-js/sdk/server";
import { jsonRpcHandler, agentCardHandler, UserBuilder } from "@a2a-js/sdk/server/express";

const text = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" });
const message = (ctx, taskId, value) => ({
  messageId: crypto.randomUUID(), contextId: ctx, taskId, role: Role.ROLE_AGENT, parts: [text(value)],
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const status = (ctx, taskId, state, value) => AgentEvent.statusUpdate({
  taskId, contextId: ctx, metadata: undefined,
  status: { state, message: value === undefined ? undefined : message(ctx, taskId, value), timestamp: new Date().toISOString() },
});
const artifact = (ctx, taskId, id, value, append, lastChunk) => AgentEvent.artifactUpdate({
  taskId, contextId: ctx, append, lastChunk, metadata: undefined,
  artifact: { artifactId: id, name: "notes", description: "", parts: [text(value)], metadata: undefined, extensions: [] },
});

const counts = new Map(); // messages per context
const cancelled = new Set(); // the tasks cancelled

class Smith {
  async execute(rc, bus) {
    const ctx = rc.contextId, id = rc.taskId;
    const said = rc.userMessage.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
    const n = (counts.get(ctx) ?? 0) + 1;
    counts.set(ctx, n);
    if (said.startsWith("say ")) {
      bus.publish(AgentEvent.message(message(ctx, undefined, "you said " + said.slice(4))));
      bus.finished();
      return;
    }
    if (!rc.task) {
      bus.publish(AgentEvent.task({ id, contextId: ctx, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [rc.userMessage], metadata: undefined }));
    } else {
      bus.publish(AgentEvent.task(rc.task));
    }
    if (rc.task && rc.task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      bus.publish(status(ctx, id, TaskState.TASK_STATE_COMPLETED, `forging ${said}`));
    } else if (said.startsWith("ask")) {
      bus.publish(status(ctx, id, TaskState.TASK_STATE_INPUT_REQUIRED, "Which metal?"));
    } else if (said === "slow") {
      bus.publish(status(ctx, id, TaskState.TASK_STATE_WORKING, "slow work"));
      for (let i = 0; i < 50 && !cancelled.has(id); i++) await new Promise((r) => setTimeout(r, 100));
      if (cancelled.has(id)) return;
      bus.publish(status(ctx, id, TaskState.TASK_STATE_COMPLETED, "slowly done"));
    } else if (said === "fail") {
      bus.publish(status(ctx, id, TaskState.TASK_STATE_FAILED, "the anvil cracked"));
    } else if (said === "huge") {
      bus.publish(artifact(ctx, id, "a1", "x".repeat(300000), false, true));
      bus.publish(status(ctx, id, TaskState.TASK_STATE_COMPLETED, undefined));
    } else {
      bus.publish(status(ctx, id, TaskState.TASK_STATE_WORKING, "heating"));
      bus.publish(artifact(ctx, id, "a1", "blade ", false, false));
      bus.publish(artifact(ctx, id, "a1", "sharpened", true, true));
      bus.publish(status(ctx, id, TaskState.TASK_STATE_COMPLETED, `message ${n} of this context: ${said}`));
    }
    bus.finished();
  }
  async cancelTask(taskId, bus) {
    cancelled.add(taskId);
    bus.publish(status("", taskId, TaskState.TASK_STATE_CANCELED, undefined));
    bus.finished();
  }
}

const app = express();
let base = "";
const card = () => ({
  name: "Smith", description: "Forges blades on request.", version: "1.0.0",
  supportedInterfaces: [{ url: base + "a2a/jsonrpc", protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
  capabilities: { streaming: process.argv[2] !== "nostream", pushNotifications: false, extensions: [] },
  defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
  skills: [{ id: "forge", name: "Forge", description: "Forges a blade of the metal you name.", tags: ["forge"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  securitySchemes: {}, securityRequirements: [], signatures: [],
});
const theCard = card(); // its URL is set once the port is known
const handler = new DefaultRequestHandler(theCard, new InMemoryTaskStore(), new Smith());
app.use("/" + AGENT_CARD_PATH, agentCardHandler({ agentCardProvider: async () => theCard }));
app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
const server = app.listen(0, "127.0.0.1", () => {
  base = `http://127.0.0.1:${server.address().port}/`;
  theCard.supportedInterfaces[0].url = base + "a2a/jsonrpc";
  console.log(`listening ${base}`);
});
process.stdin.on("end", () => process.exit(0)); // the test ended
process.stdin.resume();
