// Runs two runs of one thread with @ag-ui/client's HttpAgent against the
// AG-UI endpoint at argv[2], and prints each run's event types (and the
// text of its messages) as one JSON line.
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
const agent = new HttpAgent({ url, threadId: "npm-thread" });
for (const [i, text] of ["first", "second"].entries()) {
  agent.addMessage({ id: `u${i}`, role: "user", content: text });
  const types = [];
  let said = "";
  await agent.runAgent({ runId: `run-${i}` }, {
    onEvent({ event }) {
      types.push(event.type === "CUSTOM" ? `CUSTOM:${event.name}` : event.type);
      if (event.type === "TEXT_MESSAGE_CONTENT") said += event.delta;
    },
  });
  console.log(JSON.stringify({ types, said, messages: agent.messages.length }));
}
