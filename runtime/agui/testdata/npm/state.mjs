// Runs three runs of one thread with @ag-ui/client's HttpAgent against
// the AG-UI endpoint at argv[2] (a route whose runs change the shown
// state), and prints for each run its event types, the state the client
// holds once the run's deltas are applied, and the run's first snapshot,
// as one JSON line.
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
const agent = new HttpAgent({ url, threadId: "state-thread" });
for (const [i, text] of ["push", "pop", "again"].entries()) {
  agent.addMessage({ id: `u${i}`, role: "user", content: text });
  const types = [];
  let snapshot = null;
  let deltas = 0;
  await agent.runAgent({ runId: `run-${i}` }, {
    onEvent({ event }) {
      types.push(event.type);
      if (event.type === "STATE_SNAPSHOT" && snapshot === null) snapshot = event.snapshot;
      if (event.type === "STATE_DELTA") deltas += event.delta.length;
    },
  });
  console.log(JSON.stringify({ types, state: agent.state, snapshot, deltas }));
}
