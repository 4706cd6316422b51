// The MCP client of @modelcontextprotocol/sdk (the version package-lock.json
// pins) against the test application's server (runtime/mcpserver tests).
//
//   node client.mjs stdio <command> [args...]   each session runs the command
//   node client.mjs http <url>                  sessions over streamable HTTP
//
// It prints one JSON object: what each step saw. The Go test checks it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const [mode, target, ...rest] = process.argv.slice(2);

function transport() {
  if (mode === 'stdio') return new StdioClientTransport({ command: target, args: rest, stderr: 'inherit' });
  if (mode === 'http') return new StreamableHTTPClientTransport(new URL(target));
  throw new Error(`unknown mode ${mode}`);
}

// connect opens a session; answers, when given, are the elicitation
// answers the user gives, in order (the client then declares elicitation).
async function connect(answers) {
  const capabilities = answers ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: 'npm-test-client', version: '1.0.0' }, { capabilities });
  const asked = [];
  if (answers) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return answers.shift();
    });
  }
  const t = transport();
  await client.connect(t);
  return { client, t, asked };
}

async function close({ client, t }) {
  if (mode === 'http') await t.terminateSession();
  await client.close();
}

function text(res) {
  return res.content.filter((c) => c.type === 'text').map((c) => c.text).join('|');
}

async function call(client, name, args) {
  try {
    const res = await client.callTool({ name, arguments: args });
    return { text: text(res), isError: !!res.isError };
  } catch (e) {
    return { thrown: String(e.message ?? e), code: e.code };
  }
}

const out = {};
const one = await connect([{ action: 'accept', content: { approve: true } }, { action: 'decline' }]);
out.server = one.client.getServerVersion();
const list = await one.client.listTools();
const validator = new AjvJsonSchemaValidator();
out.tools = list.tools.map((tool) => {
  let compiles = true;
  try {
    validator.getValidator(tool.inputSchema);
  } catch (e) {
    compiles = String(e);
  }
  return { name: tool.name, type: tool.inputSchema.type, compiles, hasDescription: !!tool.description };
});
const countSchema = validator.getValidator(list.tools.find((t) => t.name === 'count').inputSchema);
out.clientValidates = {
  good: countSchema({ userMessage: 'hi', by: 2 }).valid,
  bad: countSchema({ by: 'two' }).valid,
};
out.calls = {
  count1: await call(one.client, 'count', { userMessage: 'hi', by: 2 }),
  count2: await call(one.client, 'count', { userMessage: 'again' }),
  admin: await call(one.client, 'admin', {}),
  item: await call(one.client, 'item', { item: { name: 'rope', qty: 2 } }),
  stream: await call(one.client, 'stream', { userMessage: 'go' }),
  boom: await call(one.client, 'boom', {}),
  guardedApproved: await call(one.client, 'guarded', {}),
  guardedDeclined: await call(one.client, 'guarded', {}),
  unknown: await call(one.client, 'nope', {}),
  wrongArgs: await call(one.client, 'count', { by: 'two' }),
  extraArgs: await call(one.client, 'count', { extra: true }),
};
out.asked = one.asked;
const two = await connect(null);
out.second = {
  count: await call(two.client, 'count', { userMessage: 'other' }),
  guarded: await call(two.client, 'guarded', {}),
};
out.firstAgain = await call(one.client, 'count', { userMessage: 'back' });
await close(two);
await close(one);
process.stdout.write(JSON.stringify(out) + '\n');
