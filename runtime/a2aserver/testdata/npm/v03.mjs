// Drives the A2A server with @a2a-js/sdk 0.3.14 (A2A 0.3): node v03.mjs
// <count URL> <stream URL> <wait URL>. Prints one JSON object.
import { ClientFactory } from 'a2a-v03/client';

const [countURL, streamURL, waitURL] = process.argv.slice(2);
let n = 0;
const message = (text, contextId, taskId) => ({
  message: { kind: 'message', messageId: `v03-${++n}`, role: 'user', parts: [{ kind: 'text', text }], contextId, taskId },
});
const textOf = (m) => (m?.parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');
const failure = (e) => ({ name: e?.constructor?.name, code: e?.code ?? null, message: String(e?.message ?? e) });
const out = {};

const factory = new ClientFactory();
const count = await factory.createFromUrl(countURL);
const first = await count.sendMessage(message('hi'));
const second = await count.sendMessage(message('again', first.contextId));
out.send = [
  { kind: first.kind, state: first.status.state, text: textOf(first.status.message), contextId: first.contextId },
  { state: second.status.state, text: textOf(second.status.message), sameContext: second.contextId === first.contextId },
];
const got = await count.getTask({ id: first.id });
out.get = { state: got.status.state, history: got.history.length, user: textOf(got.history[0]) };

const stream = await factory.createFromUrl(streamURL);
const kinds = [];
let chunks = '';
for await (const ev of stream.sendMessageStream(message('go'))) {
  kinds.push(ev.kind);
  if (ev.kind === 'status-update' && ev.status.state === 'working') chunks += textOf(ev.status.message);
  if (ev.kind === 'status-update') out.finalState = ev.status.state, out.final = ev.final, out.finalText = textOf(ev.status.message);
}
out.stream = { first: kinds[0], count: kinds.length, chunks };

const wait = await factory.createFromUrl(waitURL);
const slow = await wait.sendMessage({ ...message('slow'), configuration: { blocking: false } });
await new Promise((r) => setTimeout(r, 200));
const canceled = await wait.cancelTask({ id: slow.id });
out.cancel = canceled.status.state;

out.errors = {};
try { await count.getTask({ id: 'no.such' }); out.errors.unknownTask = 'no error'; } catch (e) { out.errors.unknownTask = failure(e); }
try { await wait.cancelTask({ id: slow.id }); out.errors.cancelFinished = 'no error'; } catch (e) { out.errors.cancelFinished = failure(e); }
try { await count.setTaskPushNotificationConfig({ taskId: first.id, pushNotificationConfig: { url: 'http://127.0.0.1:1/' } }); out.errors.push = 'no error'; } catch (e) { out.errors.push = failure(e); }
const unknown = await (await fetch(countURL, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tasks/nothing', params: {} }) })).json();
out.errors.unknownMethod = unknown.error.code;
const bad = await (await fetch(countURL, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"jsonrpc": ' })).json();
out.errors.malformed = bad.error.code;
console.log(JSON.stringify(out));
