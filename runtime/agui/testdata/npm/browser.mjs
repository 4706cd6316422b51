// The page script of the Chromium test of runtime/agui: @ag-ui/client's
// HttpAgent in the browser runs a run that ends on a front-end tool call,
// then a run carrying the tool's result, against the AG-UI endpoint at
// /agui of the page's origin. window.testResult resolves with what each
// run saw.
import { HttpAgent } from "@ag-ui/client";

const agent = new HttpAgent({ url: location.origin + "/agui", threadId: "browser-thread" });
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
  return { types, said, calls };
}

window.testResult = (async () => {
  agent.addMessage({ id: "u0", role: "user", content: "x" });
  const first = await run("run-0");
  const call = first.calls[first.calls.length - 1];
  // The front end runs the tool: here, the browser's own answer.
  const args = JSON.parse(call.function.arguments);
  agent.addMessage({ id: "t0", role: "tool", toolCallId: call.id, content: JSON.stringify({ city: "Paris", precision: args.precision, agent: navigator.userAgent.includes("Chrome") }) });
  const second = await run("run-1");
  return { ok: true, first, second };
})().catch((e) => ({ ok: false, error: String((e && e.stack) || e) }));
