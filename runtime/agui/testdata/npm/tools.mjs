// Runs a front-end tool round with @ag-ui/client's HttpAgent against the
// AG-UI endpoint at argv[2]: the first run ends on a tool call the front
// end runs; the second carries its result as a tool message. Prints each
// run's event types, text, and the tool calls of the agent's messages as
// one JSON line.
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
const agent = new HttpAgent({ url, threadId: "npm-tools" });
const tools = [{ name: "Locate", description: "the user's location", parameters: { type: "object", properties: { precision: { type: "string" } } } }];

async function run(runId) {
  const types = [];
  let said = "";
  await agent.runAgent({ runId, tools }, {
    onEvent({ event }) {
      types.push(event.type);
      if (event.type === "TEXT_MESSAGE_CONTENT") said += event.delta;
    },
  });
  const calls = agent.messages.flatMap((m) => (m.role === "assistant" && m.toolCalls) || []);
  console.log(JSON.stringify({ types, said, calls }));
  return calls;
}

agent.addMessage({ id: "u0", role: "user", content: "x" });
const calls = await run("run-0");
const call = calls[calls.length - 1];
const args = JSON.parse(call.function.arguments);
agent.addMessage({ id: "t0", role: "tool", toolCallId: call.id, content: JSON.stringify({ city: "Lyon", precision: args.precision }) });
await run("run-1");
