// The MCP client of @modelcontextprotocol/sdk against the tool boxes of
// the test application's server (runtime/mcpserver tests), as client.mjs:
//
//   node boxes.mjs stdio <command> [args...]
//   node boxes.mjs http <url>
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

async function connect(answers) {
  const capabilities = answers ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: 'npm-boxes-client', version: '1.0.0' }, { capabilities });
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
const one = await connect([{ action: 'decline' }, { action: 'accept', content: { approve: true } }]);
const list = await one.client.listTools();
const validator = new AjvJsonSchemaValidator();
out.tools = list.tools.filter((tool) => tool.name.includes('.')).map((tool) => {
  let compiles = true;
  try {
    validator.getValidator(tool.inputSchema);
  } catch (e) {
    compiles = String(e);
  }
  return { name: tool.name, type: tool.inputSchema.type, compiles, hasDescription: !!tool.description };
});
out.calls = {
  add: await call(one.client, 'count.add', { by: 4 }),
  route: await call(one.client, 'count', { userMessage: 'then' }),
  read: await call(one.client, 'count.read', {}),
  wrongArgs: await call(one.client, 'count.add', { by: 'four' }),
  resetDeclined: await call(one.client, 'count.reset', {}),
  resetApproved: await call(one.client, 'count.reset', {}),
  readAfter: await call(one.client, 'count.read', {}),
  reveal: await call(one.client, 'admin.reveal', {}),
};
out.asked = one.asked;
const two = await connect(null);
out.second = {
  read: await call(two.client, 'count.read', {}),
  reset: await call(two.client, 'count.reset', {}),
};
await close(two);
await close(one);
process.stdout.write(JSON.stringify(out) + '\n');
