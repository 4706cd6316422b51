// Drives the A2A server with @a2a-js/sdk 1.3.0 (A2A 1.0): node v1.mjs
// <count URL> <stream URL> <wait URL>. Prints one JSON object.
import { ClientFactory } from 'a2a-v1/client';
import { Role, TaskState } from 'a2a-v1';

const [countURL, streamURL, waitURL] = process.argv.slice(2);
let n = 0;
const message = (text, contextId = '', taskId = '') => ({
  message: {
    messageId: `v1-${++n}`, contextId, taskId, role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined, extensions: [], referenceTaskIds: [],
  },
  configuration: undefined, metadata: undefined, tenant: '',
});
const textOf = (m) => (m?.parts ?? []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');
const state = (s) => TaskState[s];
const failure = (e) => ({ name: e?.constructor?.name, code: e?.envelopeCode ?? e?.code ?? null, message: String(e?.message ?? e) });
const out = {};

const factory = new ClientFactory();
const count = await factory.createFromUrl(countURL);
const card = await (await fetch(new URL('.well-known/agent-card.json', countURL))).json();
out.card = { name: card.name, interfaces: card.supportedInterfaces.map((i) => i.protocolVersion), skills: card.skills.map((s) => s.id), streaming: card.capabilities.streaming };

const first = await count.sendMessage(message('hi'));
const second = await count.sendMessage(message('again', first.contextId));
out.send = [
  { state: state(first.status.state), text: textOf(first.status.message), contextId: first.contextId },
  { state: state(second.status.state), text: textOf(second.status.message), sameContext: second.contextId === first.contextId },
];
const got = await count.getTask({ id: first.id, tenant: '' });
out.get = { state: state(got.status.state), history: got.history.length, user: textOf(got.history[0]) };
const listed = await count.listTasks({ tenant: '', contextId: first.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
out.list = listed.tasks.map((t) => t.id === second.id ? 'second' : t.id === first.id ? 'first' : t.id);

const stream = await factory.createFromUrl(streamURL);
const events = [];
let chunks = '';
for await (const ev of stream.sendMessageStream(message('go'))) {
  const c = ev.payload?.$case ?? (ev.status ? 'statusUpdate' : ev.artifact ? 'artifactUpdate' : ev.history ? 'task' : '?');
  const v = ev.payload?.value ?? ev;
  events.push(c);
  if (c === 'statusUpdate' && v.status.state === TaskState.TASK_STATE_WORKING) chunks += textOf(v.status.message);
  if (c === 'statusUpdate') out.finalState = state(v.status.state), out.finalText = textOf(v.status.message);
}
out.stream = { first: events[0], count: events.length, chunks };

const wait = await factory.createFromUrl(waitURL);
const slow = await wait.sendMessage({ ...message('slow'), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } });
await new Promise((r) => setTimeout(r, 200));
const canceled = await wait.cancelTask({ id: slow.id, tenant: '', metadata: undefined });
out.cancel = state(canceled.status.state);

out.errors = {};
try { await count.getTask({ id: 'no.such', tenant: '' }); out.errors.unknownTask = 'no error'; } catch (e) { out.errors.unknownTask = failure(e); }
const rpc = async (body) => (await (await fetch(countURL, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }, body })).json()).error.code;
out.errors.unknownMethod = await rpc(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'NoSuchMethod', params: {} }));
out.errors.push = await rpc(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'CreateTaskPushNotificationConfig', params: { taskId: first.id } }));
try { await wait.resubscribeTask({ id: slow.id, tenant: '' }).next(); out.errors.resubscribeFinished = 'no error'; } catch (e) { out.errors.resubscribeFinished = failure(e); }
out.errors.malformed = await rpc('{"jsonrpc": "2.0", "id": 1, "method": ');
console.log(JSON.stringify(out));
