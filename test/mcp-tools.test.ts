// test-lane: once (MCP tools over the services whose SQL runs on both stores in mcp and the modules' own files)
/**
 * The MCP tools over templates, verifications, webhooks and the account, called with the SDK's own
 * Client over HTTP against a listening app; and the discovery documents that name them
 * (/.well-known/mcp.json, /llms.txt).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { and, eq } from 'drizzle-orm';
import { auditLog } from '../src/db/schema/index.js';
import { account, ledger, multipart, newKey, samplePdf, sigField, signer } from './fixtures/envelopes.js';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';

const MY_TOOLS = [
  'list_templates',
  'get_template',
  'create_envelope_from_template',
  'create_webhook',
  'list_webhooks',
  'list_webhook_deliveries',
  'create_verification',
  'get_verification_status',
  'get_account',
  'get_account_usage',
];

describe('GET /.well-known/mcp.json', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('names the endpoint, the version, the envelope price, the accepted credentials and the tools', async () => {
    const res = await t.app.inject({ url: '/.well-known/mcp.json' });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const doc = res.json();
    assert.equal(doc.name, 'Signet');
    assert.equal(doc.version, '1.0.0');
    assert.equal(typeof doc.description, 'string');
    assert.equal(doc.mcpUrl, 'http://signet.test/mcp');
    assert.deepEqual(doc.pricing, { per_envelope_cents: 10, currency: 'USD' });
    // x402 is off in this app: only the bearer credentials are offered.
    assert.deepEqual(doc.auth.map((a: { type: string }) => a.type), ['api_key', 'wallet_jwt']);
    assert.ok(doc.auth.every((a: { header: string }) => a.header === 'Authorization'));
    const tools = new Map<string, { priceCents: number | null; mutates: boolean }>(doc.tools.map((x: { name: string }) => [x.name, x]));
    for (const name of MY_TOOLS) assert.ok(tools.has(name), `${name} is listed`);
    assert.equal(tools.get('create_envelope_from_template')?.priceCents, 10);
    assert.equal(tools.get('create_verification')?.priceCents, 50);
    assert.deepEqual(tools.get('list_templates'), { name: 'list_templates', title: 'List templates', priceCents: null, mutates: false });
    assert.equal(tools.get('create_webhook')?.mutates, true);
  });

  test('is documented in the OpenAPI under Discovery', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    assert.equal(doc.paths['/.well-known/mcp.json']?.get?.operationId, 'getMcpManifest');
  });

  test('offers x402 PAYMENT-SIGNATURE when x402 is on', async () => {
    const own = await createTestApp({
      env: {
        X402_FACILITATOR_URL: 'http://127.0.0.1:9/facilitator',
        X402_NETWORK: 'eip155:84532',
        X402_ASSET: `0x${'a'.repeat(40)}`,
        X402_PAY_TO: `0x${'b'.repeat(40)}`,
        X402_ASSET_NAME: 'USDC',
      },
    });
    try {
      const doc = (await own.app.inject({ url: '/.well-known/mcp.json' })).json();
      const x402 = doc.auth.find((a: { type: string }) => a.type === 'x402');
      assert.ok(x402, JSON.stringify(doc.auth));
      assert.equal(x402.header, 'PAYMENT-SIGNATURE');
      assert.match(x402.description, /eip155:84532/);
      assert.match(x402.description, /USD 0\.001/);
      assert.match((await own.app.inject({ url: '/llms.txt' })).body, /^- x402: .*PAYMENT-SIGNATURE/m);
    } finally {
      await own.close();
    }
  });

  test('MCP_ENABLED=false: 404 NOT_FOUND, and llms.txt leaves MCP out', async () => {
    const off = await createTestApp({ env: { MCP_ENABLED: 'false' } });
    try {
      const res = await off.app.inject({ url: '/.well-known/mcp.json' });
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.json().code, 'NOT_FOUND');
      assert.match(res.json().error, /MCP_ENABLED/);
      const llms = (await off.app.inject({ url: '/llms.txt' })).body;
      assert.ok(!llms.includes('## MCP'), llms);
      assert.ok(!llms.includes('create_envelope_from_template'));
    } finally {
      await off.close();
    }
  });
});

describe('GET /llms.txt: the MCP section', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('names the endpoint and lists every tool with its price', async () => {
    const text = (await t.app.inject({ url: '/llms.txt' })).body;
    assert.match(text, /^## MCP/m);
    assert.ok(text.includes('POST http://signet.test/mcp'), text);
    assert.ok(text.includes('http://signet.test/.well-known/mcp.json'));
    for (const name of MY_TOOLS) assert.match(text, new RegExp(`^- ${name}: `, 'm'), name);
    assert.match(text, /^- create_envelope_from_template: .*\(USD 0\.10, idempotencyKey required\)$/m);
    assert.match(text, /^- create_verification: .*\(USD 0\.50, idempotencyKey required\)$/m);
    assert.match(text, /^- get_account: .*\(free\)$/m);
    assert.match(text, /^- create_webhook: .*\(free, changes state\)$/m);
    assert.match(text, /^- x402: off on this server$/m);
    assert.match(text, /^Limits: a JSON-RPC batch holds at most 10 messages .*5242880 bytes of PDF.*downloadUrl/m);
  });
});

/** The SDK's client over HTTP, with the credential as REST takes it. */
async function connect(base: string, apiKey: string): Promise<Client> {
  const client = new Client({ name: 'signet-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: bearer(apiKey) } }));
  return client;
}

type CallResult = Awaited<ReturnType<Client['callTool']>>;

/** The structured answer of a successful call. */
function ok<T = Record<string, unknown>>(result: CallResult): T {
  assert.ok(!result.isError, `tool error: ${JSON.stringify(result)}`);
  assert.ok(result.structuredContent, JSON.stringify(result));
  return result.structuredContent as T;
}

/** {code, error} of a failed call: structuredContent, or the JSON of its text. */
function errorOf(result: CallResult): { code: string; error: string } {
  assert.equal(result.isError, true, JSON.stringify(result));
  if (result.structuredContent && 'code' in (result.structuredContent as object)) return result.structuredContent as { code: string; error: string };
  const text = (result.content as { type: string; text?: string }[]).find((c) => c.type === 'text')?.text ?? '';
  return JSON.parse(text.slice(text.indexOf('{')));
}

async function templateOf(t: TestApp, customer: TestCustomer): Promise<string> {
  const mp = multipart([
    { name: 'file', value: await samplePdf(), filename: 'nda.pdf' },
    { name: 'payload', value: JSON.stringify({ title: 'NDA', recipients: [signer(1)], fields: [sigField(signer(1).email)], meta: { subject: 'Please sign the NDA' } }) },
  ]);
  const res = await t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(customer.apiKey), 'content-type': mp.contentType }, payload: mp.body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().templateId;
}

const auditActions = async (t: TestApp, customerId: string, action: string) =>
  t.container.db.select().from(auditLog).where(and(eq(auditLog.customerId, customerId), eq(auditLog.action, action)));

describe('MCP tools over POST /mcp (SDK client over HTTP)', () => {
  let t: TestApp;
  let base: string;
  let client: Client;
  before(async () => {
    t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' }, creditCents: 500 });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = await connect(base, t.customer.apiKey);
  });
  after(async () => {
    await client?.close();
    await t.close();
  });

  test('tools/list carries these tools, each with a description and input and output schemas', async () => {
    const { tools } = await client.listTools();
    for (const name of MY_TOOLS) {
      const tool = tools.find((x) => x.name === name);
      assert.ok(tool, `${name} is listed`);
      assert.ok(tool.description && tool.description.length > 40, name);
      assert.equal(tool.inputSchema.type, 'object');
      assert.equal(tool.outputSchema?.type, 'object', name);
    }
    const fromTemplate = tools.find((x) => x.name === 'create_envelope_from_template')!;
    assert.ok(fromTemplate.inputSchema.required?.includes('idempotencyKey'));
    assert.match(fromTemplate.description!, /USD 0\.10/);
  });

  test('list_templates, get_template, then create_envelope_from_template charges once; the same idempotencyKey replays the same envelope', async () => {
    const templateId = await templateOf(t, t.customer);
    const listed = ok<{ data: { templateId: string }[]; total: number; limit: number; offset: number }>(await client.callTool({ name: 'list_templates', arguments: {} }));
    assert.deepEqual([listed.total, listed.limit, listed.offset], [1, 20, 0]);
    assert.equal(listed.data[0].templateId, templateId);
    const template = ok<{ recipients: { id: number }[]; fields: unknown[] }>(await client.callTool({ name: 'get_template', arguments: { templateId } }));
    assert.deepEqual(template.recipients.map((r) => r.id), [1]);
    assert.equal(template.fields.length, 1);

    const before = (await account(t)).creditsCents;
    const idempotencyKey = newKey();
    const args = { templateId, idempotencyKey, recipients: [{ id: 1, email: 'alice@example.com', name: 'Alice' }] };
    const first = await client.callTool({ name: 'create_envelope_from_template', arguments: args });
    const envelope = ok<{ envelopeId: string; status: string; recipients: { email: string }[] }>(first);
    assert.equal(envelope.status, 'PENDING');
    assert.deepEqual(envelope.recipients.map((r) => r.email), ['alice@example.com']);
    assert.ok((first.content as { text: string }[])[0].text.includes(envelope.envelopeId));
    assert.equal((await account(t)).creditsCents, before - 10);

    const replay = ok<{ envelopeId: string }>(await client.callTool({ name: 'create_envelope_from_template', arguments: args }));
    assert.equal(replay.envelopeId, envelope.envelopeId);
    assert.equal((await account(t)).creditsCents, before - 10, 'no second charge');
    const debits = (await ledger(t, t.customer.id)).filter((l) => l.direction === 'debit' && l.envelopeId === envelope.envelopeId);
    assert.equal(debits.length, 1);
    assert.equal(debits[0].amountMicros, 100_000n);
    assert.equal((await auditActions(t, t.customer.id, 'template.use')).length, 1);
  });

  test("another customer's template is TEMPLATE_NOT_FOUND as an isError result, and charges nothing", async () => {
    const other = await t.createCustomer(500);
    const theirs = await templateOf(t, other);
    const before = (await account(t)).creditsCents;
    const result = await client.callTool({ name: 'create_envelope_from_template', arguments: { templateId: theirs, idempotencyKey: newKey(), recipients: [{ id: 1, email: 'x@example.com', name: 'X' }] } });
    assert.equal(errorOf(result).code, 'TEMPLATE_NOT_FOUND');
    assert.equal(errorOf(await client.callTool({ name: 'get_template', arguments: { templateId: theirs } })).code, 'TEMPLATE_NOT_FOUND');
    assert.equal((await account(t)).creditsCents, before);
  });

  test('create_verification charges USD 0.50 once; get_verification_status reads it live', async () => {
    const before = (await account(t)).creditsCents;
    const idempotencyKey = newKey();
    const args = { type: 'email', email: 'verify-me@example.com', name: 'Vera', metadata: { ref: 'mcp-1' }, idempotencyKey };
    const created = ok<{ verificationId: string; status: string; verificationUrl: string; metadata: Record<string, string> }>(await client.callTool({ name: 'create_verification', arguments: args }));
    assert.equal(created.status, 'pending');
    assert.match(created.verificationUrl, /^http:\/\/signet\.test\/verify\//);
    assert.deepEqual(created.metadata, { ref: 'mcp-1' });
    assert.equal((await account(t)).creditsCents, before - 50);
    const again = ok<{ verificationId: string }>(await client.callTool({ name: 'create_verification', arguments: args }));
    assert.equal(again.verificationId, created.verificationId);
    assert.equal((await account(t)).creditsCents, before - 50, 'the replay charges nothing');
    const debits = (await ledger(t, t.customer.id)).filter((l) => l.direction === 'debit' && l.amountMicros === 500_000n);
    assert.equal(debits.length, 1);

    const status = ok<{ verificationId: string; status: string }>(await client.callTool({ name: 'get_verification_status', arguments: { verificationId: created.verificationId } }));
    assert.deepEqual([status.verificationId, status.status], [created.verificationId, 'pending']);
    const missing = await client.callTool({ name: 'get_verification_status', arguments: { verificationId: '00000000-0000-4000-8000-000000000000' } });
    assert.equal(errorOf(missing).code, 'VERIFICATION_NOT_FOUND');
  });

  test('create_webhook shows the secret once; list_webhooks lists it without; list_webhook_deliveries reads its deliveries', async () => {
    const created = ok<{ id: string; webhookId: string; secret: string; events: string[] }>(
      await client.callTool({ name: 'create_webhook', arguments: { url: 'http://127.0.0.1:9/hook', events: ['envelope.completed', 'envelope.completed'] } }),
    );
    assert.match(created.secret, /^whsec_[0-9a-f]{32}$/);
    assert.deepEqual(created.events, ['envelope.completed']);
    const listed = ok<{ data: Record<string, unknown>[]; total: number }>(await client.callTool({ name: 'list_webhooks', arguments: { limit: 5 } }));
    const mine = listed.data.find((w) => w.id === created.id);
    assert.ok(mine, JSON.stringify(listed));
    assert.ok(!('secret' in mine), 'no secret in the list');
    const deliveries = ok<{ data: unknown[]; total: number }>(await client.callTool({ name: 'list_webhook_deliveries', arguments: { webhookId: created.webhookId } }));
    assert.deepEqual([deliveries.data, deliveries.total], [[], 0]);
    assert.equal((await auditActions(t, t.customer.id, 'webhook.create')).length >= 1, true);

    const refused = await client.callTool({ name: 'create_webhook', arguments: { url: 'http://10.0.0.1/hook', events: ['*'] } });
    assert.equal(errorOf(refused).code, 'INVALID_WEBHOOK_URL');
    const foreign = await client.callTool({ name: 'list_webhook_deliveries', arguments: { webhookId: '00000000-0000-4000-8000-000000000000' } });
    assert.equal(errorOf(foreign).code, 'WEBHOOK_NOT_FOUND');
  });

  test('get_account and get_account_usage answer as GET /v1/account and /v1/account/usage', async () => {
    const acct = ok<{ accountId: string; creditsCents: number; mode: string }>(await client.callTool({ name: 'get_account', arguments: {} }));
    const rest = (await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) })).json();
    assert.deepEqual(acct, rest);
    assert.equal(acct.accountId, t.customer.id);
    const usage = ok<{ data: { direction: string; amountCents: number }[]; total: number; limit: number; offset: number }>(await client.callTool({ name: 'get_account_usage', arguments: { limit: 100 } }));
    const restUsage = (await t.app.inject({ url: '/v1/account/usage?limit=100', headers: bearer(t.customer.apiKey) })).json();
    assert.deepEqual(usage, restUsage);
    assert.ok(usage.data.some((u) => u.direction === 'debit' && u.amountCents === 50));
  });

  test('paging outside 1..100 is refused by the input schema before the tool runs', async () => {
    // The SDK's own refusal: a JSON-RPC error or an isError result naming the argument.
    const outcome = await client.callTool({ name: 'list_templates', arguments: { limit: 101 } }).then(
      (r) => (assert.equal(r.isError, true, JSON.stringify(r)), JSON.stringify(r.content)),
      (err: Error) => err.message,
    );
    assert.match(outcome, /limit/);
  });
});
