/**
 * POST /mcp: the endpoint (auth, idempotency, errors, switches) and the envelope tools, driven by the
 * SDK's own Client over HTTP against a listening app. The other tools are in test/mcp-tools.test.ts,
 * a paid tools/call on a local chain in test/e2e/mcp-x402.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { auditLog, envelopes } from '../src/db/schema/index.js';
import { AppError } from '../src/errors.js';
import { createMcpEndpoint } from '../src/modules/mcp/mcp-server.js';
import { defineTool } from '../src/modules/mcp/tool.js';
import { account, createEnvelope, drain, ledger, makePdf, newKey, samplePdf, sigField, signAs, signer, tokenOf } from './fixtures/envelopes.js';
import { bearer, createTestApp, type TestApp } from './harness.js';

/** DESIGN §5: every tool POST /mcp serves. */
const ALL_TOOLS = [
  'create_envelope', 'create_draft', 'add_fields', 'remove_field', 'send_envelope', 'resend_envelope', 'cancel_envelope',
  'get_envelope', 'get_envelope_status', 'list_envelopes', 'download_envelope', 'list_templates', 'get_template',
  'create_envelope_from_template', 'create_webhook', 'list_webhooks', 'list_webhook_deliveries', 'create_verification',
  'get_verification_status', 'get_account', 'get_account_usage',
];
const BILLABLE = ['create_envelope', 'send_envelope', 'create_envelope_from_template', 'create_verification'];
const MAX_PDF_BYTES = 200_000;
const ACCEPT = 'application/json, text/event-stream';

/** Connected and with the tool list read, as an agent starts: the client then checks every result against its tool's output schema. */
async function connect(base: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'signet-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
  await client.listTools();
  return client;
}

type CallResult = Awaited<ReturnType<Client['callTool']>>;

function ok<T = Record<string, unknown>>(result: CallResult): T {
  assert.ok(!result.isError, `tool error: ${JSON.stringify(result)}`);
  assert.ok(result.structuredContent, JSON.stringify(result));
  return result.structuredContent as T;
}

function failed(result: CallResult, code: string): Record<string, unknown> {
  assert.equal(result.isError, true, JSON.stringify(result));
  const content = result.structuredContent as Record<string, unknown>;
  assert.equal(content.code, code, JSON.stringify(result));
  assert.equal(typeof content.error, 'string');
  const text = (result.content as { type: string; text: string }[])[0].text;
  assert.ok(text.includes(code), text);
  assert.ok(!/\n\s+at /.test(text), 'no stack trace');
  return content;
}

/** A raw JSON-RPC POST /mcp, as a client without the SDK sends it. */
function rpc(base: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: ACCEPT, ...headers }, body: JSON.stringify(body) });
}
const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

/** Every request after initialize names the protocol version (an unknown one is refused: 400). */
const PROTOCOL = { 'mcp-protocol-version': '2025-06-18' };
const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

const markerPdf = () => makePdf([[{ text: 'Please sign below.', x: 72, y: 700 }, { text: '{{signature, r1}}', x: 72, y: 500 }]]);
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

describe('POST /mcp with the SDK client', () => {
  let t: TestApp;
  let base: string;
  let client: Client;
  before(async () => {
    t = await createTestApp({ env: { MAX_PDF_BYTES: String(MAX_PDF_BYTES) }, creditCents: 500 });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = await connect(base, bearer(t.customer.apiKey));
  });
  after(async () => {
    await client?.close();
    await t?.close();
  });

  test('initialize: the server names itself, offers tools and says how to call them', () => {
    assert.equal(client.getServerVersion()?.name, 'Signet');
    assert.ok(client.getServerCapabilities()?.tools);
    assert.match(client.getInstructions() ?? '', /idempotencyKey/);
  });

  test('ping answers', async () => {
    assert.deepEqual(await client.ping(), {});
  });

  test('tools/list: every tool of DESIGN §5, each with a description and input and output schemas; billable ones require idempotencyKey', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((x) => x.name).sort(), [...ALL_TOOLS].sort());
    for (const tool of tools) {
      assert.ok(tool.description && tool.description.length > 40, tool.name);
      assert.match(tool.description!, /Error|Free|free|USD/, tool.name);
      assert.equal(tool.inputSchema.type, 'object', tool.name);
      assert.equal(tool.outputSchema?.type, 'object', tool.name);
      assert.equal(tool.annotations?.readOnlyHint, !/^(create|add|remove|send|resend|cancel)_/.test(tool.name), tool.name);
      if (BILLABLE.includes(tool.name)) assert.ok(tool.inputSchema.required?.includes('idempotencyKey'), tool.name);
    }
    const create = tools.find((x) => x.name === 'create_envelope')!;
    assert.match(create.description!, /USD 0\.10/);
    assert.ok(create.inputSchema.required?.includes('pdfBase64'));
  });

  test('a whole lifecycle: create with markers (charged once), status, resend, sign through the recipient routes, download', async () => {
    const before = (await account(t)).creditsCents;
    const pdf = await markerPdf();
    const created = ok<{ envelopeId: string; status: string; detectedFromPlaceholders: boolean; fields: { type: string; recipientEmail: string }[]; recipients: { email: string; signingUrl: string }[] }>(
      await client.callTool({
        name: 'create_envelope',
        arguments: { pdfBase64: b64(pdf), title: 'MCP lifecycle', recipients: [signer(1), { email: 'cc@example.com', name: 'Copy', role: 'CC' }], fields: [], idempotencyKey: newKey() },
      }),
    );
    assert.equal(created.status, 'PENDING');
    assert.equal(created.detectedFromPlaceholders, true);
    assert.deepEqual(created.fields.map((f) => [f.type, f.recipientEmail]), [['SIGNATURE', signer(1).email]]);
    assert.equal((await account(t)).creditsCents, before - 10);
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, created.envelopeId), eq(auditLog.action, 'envelope.create')));
    assert.equal(audit.length, 1, 'the same audit row as REST');

    const id = created.envelopeId;
    const pending = await client.callTool({ name: 'get_envelope_status', arguments: { envelopeId: id } });
    assert.equal(ok<{ status: string }>(pending).status, 'PENDING');
    assert.ok((pending.content as { text: string }[])[0].text.includes(id));
    failed(await client.callTool({ name: 'resend_envelope', arguments: { envelopeId: id } }), 'INVALID_STATE');

    await drain(t);
    assert.equal(ok<{ status: string }>(await client.callTool({ name: 'get_envelope_status', arguments: { envelopeId: id } })).status, 'SENT');
    const resent = ok<{ success: boolean; resentTo: { email: string }[] }>(await client.callTool({ name: 'resend_envelope', arguments: { envelopeId: id } }));
    assert.deepEqual(resent.resentTo.map((r) => r.email), [signer(1).email]);
    failed(await client.callTool({ name: 'download_envelope', arguments: { envelopeId: id } }), 'ENVELOPE_NOT_COMPLETE');

    await signAs(t, tokenOf(created.recipients.find((r) => r.email === signer(1).email)!.signingUrl));
    await drain(t);
    const done = ok<{ status: string; completedAt: string | null }>(await client.callTool({ name: 'get_envelope_status', arguments: { envelopeId: id } }));
    assert.equal(done.status, 'COMPLETED');
    assert.ok(done.completedAt);

    const download = await client.callTool({ name: 'download_envelope', arguments: { envelopeId: id } });
    const file = ok<{ pdfBase64: string; sizeBytes: number; filename: string; contentType: string; downloadUrl: string; version: string }>(download);
    const bytes = Buffer.from(file.pdfBase64, 'base64');
    assert.equal(bytes.subarray(0, 5).toString(), '%PDF-');
    assert.equal(bytes.length, file.sizeBytes);
    assert.deepEqual([file.version, file.contentType, file.filename], ['signed', 'application/pdf', 'MCP_lifecycle-signed.pdf']);
    assert.equal(file.downloadUrl, `http://signet.test/v1/envelopes/${id}/download?version=signed`);
    const rest = await t.app.inject({ url: `/v1/envelopes/${id}/download`, headers: bearer(t.customer.apiKey) });
    assert.deepEqual(bytes, rest.rawPayload, 'the same sealed PDF as REST serves');
    const original = ok<{ pdfBase64: string }>(await client.callTool({ name: 'download_envelope', arguments: { envelopeId: id, version: 'original' } }));
    assert.deepEqual(new Uint8Array(Buffer.from(original.pdfBase64, 'base64')), pdf);

    const listed = ok<{ data: { envelopeId: string }[]; total: number }>(await client.callTool({ name: 'list_envelopes', arguments: { status: 'COMPLETED', limit: 5 } }));
    assert.deepEqual(listed.data.map((e) => e.envelopeId), [id]);
    assert.equal(listed.total, 1);
  });

  test('a draft: create_draft (free), add_fields, remove_field, send_envelope (charged), then cancel_envelope refunds it', async () => {
    const before = (await account(t)).creditsCents;
    const draft = ok<{ envelopeId: string; status: string; fields: unknown[] }>(
      await client.callTool({ name: 'create_draft', arguments: { pdfBase64: b64(await samplePdf()), title: 'Draft', recipients: [signer(1), signer(2)] } }),
    );
    assert.equal(draft.status, 'DRAFT');
    assert.deepEqual(draft.fields, []);
    const id = draft.envelopeId;
    const added = ok<{ fields: { fieldId: number; recipientEmail: string }[] }>(
      await client.callTool({ name: 'add_fields', arguments: { envelopeId: id, fields: [sigField(signer(1).email), sigField(signer(2).email), sigField(signer(2).email, { type: 'TEXT', positionYPercent: 20 })] } }),
    );
    assert.equal(added.fields.length, 3);
    ok(await client.callTool({ name: 'remove_field', arguments: { envelopeId: id, fieldId: added.fields[2].fieldId } }));
    failed(await client.callTool({ name: 'remove_field', arguments: { envelopeId: id, fieldId: added.fields[2].fieldId } }), 'INVALID_FIELD_ID');
    assert.equal((await account(t)).creditsCents, before, 'a draft is free');

    const sent = ok<{ status: string; recipients: { signingUrl: string }[] }>(await client.callTool({ name: 'send_envelope', arguments: { envelopeId: id, meta: { subject: 'Sign it' }, idempotencyKey: newKey() } }));
    assert.equal(sent.status, 'SENT');
    assert.equal(sent.recipients.length, 2);
    assert.equal((await account(t)).creditsCents, before - 10);
    failed(await client.callTool({ name: 'add_fields', arguments: { envelopeId: id, fields: [sigField(signer(1).email)] } }), 'ENVELOPE_NOT_DRAFT');

    ok(await client.callTool({ name: 'cancel_envelope', arguments: { envelopeId: id } }));
    const envelope = ok<{ status: string; events: { event: string }[] }>(await client.callTool({ name: 'get_envelope', arguments: { envelopeId: id } }));
    assert.equal(envelope.status, 'CANCELLED');
    await drain(t);
    assert.equal((await account(t)).creditsCents, before, 'the send is refunded');
  });

  test('the same idempotencyKey twice: one envelope, one charge, the same answer; other arguments under it are refused', async () => {
    const before = (await account(t)).creditsCents;
    const countBefore = (await t.container.db.select().from(envelopes)).length;
    const idempotencyKey = newKey();
    const args = { pdfBase64: b64(await samplePdf()), title: 'Once', recipients: [signer(1)], fields: [sigField(signer(1).email)], idempotencyKey };
    const first = await client.callTool({ name: 'create_envelope', arguments: args });
    // The same arguments in another key order are the same call.
    const { idempotencyKey: _k, ...rest } = args;
    const second = await client.callTool({ name: 'create_envelope', arguments: { idempotencyKey, ...Object.fromEntries(Object.entries(rest).reverse()) } });
    assert.deepEqual(second.structuredContent, first.structuredContent);
    assert.equal(second._meta?.idempotentReplayed, true);
    assert.equal((await t.container.db.select().from(envelopes)).length, countBefore + 1);
    assert.equal((await account(t)).creditsCents, before - 10);
    const id = ok<{ envelopeId: string }>(first).envelopeId;
    const debits = (await ledger(t, t.customer.id)).filter((l) => l.envelopeId === id && l.direction === 'debit');
    assert.equal(debits.length, 1);

    failed(await client.callTool({ name: 'create_envelope', arguments: { ...args, title: 'Twice' } }), 'IDEMPOTENCY_KEY_REUSED');
    // MCP keys live apart from REST's Idempotency-Key values: the same value on REST is a new request.
    const restEnvelope = await createEnvelope(t, { title: 'REST', recipients: [signer(1)] }, { key: idempotencyKey });
    assert.notEqual(restEnvelope.envelopeId, id);
  });

  test('a REST Idempotency-Key mcp:<k> and an MCP idempotencyKey <k> are two records, in either order', async () => {
    const args = async (idempotencyKey: string) => ({ pdfBase64: b64(await samplePdf()), title: 'Namespaced', recipients: [signer(1)], fields: [sigField(signer(1).email)], idempotencyKey });
    const before = (await account(t)).creditsCents;
    const first = newKey();
    const viaMcp = ok<{ envelopeId: string }>(await client.callTool({ name: 'create_envelope', arguments: await args(first) }));
    const viaRest = await createEnvelope(t, { title: 'Namespaced', recipients: [signer(1)] }, { key: `mcp:${first}` });
    assert.notEqual(viaRest.envelopeId, viaMcp.envelopeId);

    const second = newKey();
    const restFirst = await createEnvelope(t, { title: 'Namespaced', recipients: [signer(1)] }, { key: `mcp:${second}` });
    const mcpSecond = ok<{ envelopeId: string }>(await client.callTool({ name: 'create_envelope', arguments: await args(second) }));
    assert.notEqual(mcpSecond.envelopeId, restFirst.envelopeId);
    assert.equal((await account(t)).creditsCents, before - 40, 'four envelopes, four charges');

    // Each door still replays its own record.
    const replay = await client.callTool({ name: 'create_envelope', arguments: await args(second) });
    assert.equal(ok<{ envelopeId: string }>(replay).envelopeId, mcpSecond.envelopeId);
    assert.equal(replay._meta?.idempotentReplayed, true);
    assert.equal((await createEnvelope(t, { title: 'Namespaced', recipients: [signer(1)] }, { key: `mcp:${second}` })).envelopeId, restFirst.envelopeId);
    assert.equal((await account(t)).creditsCents, before - 40);
  });

  test('a refusal inside the call is stored and replayed as such; nothing is charged', async () => {
    const before = (await account(t)).creditsCents;
    const idempotencyKey = newKey();
    const args = { pdfBase64: b64(await samplePdf()), recipients: [signer(1)], fields: [sigField('nobody@example.com')], idempotencyKey };
    const first = failed(await client.callTool({ name: 'create_envelope', arguments: args }), 'RECIPIENT_NOT_FOUND');
    const again = await client.callTool({ name: 'create_envelope', arguments: args });
    assert.deepEqual(failed(again, 'RECIPIENT_NOT_FOUND'), first);
    assert.equal(again._meta?.idempotentReplayed, true);
    assert.equal((await account(t)).creditsCents, before);
  });

  test('error results: an unknown envelope, another customer\'s envelope, an oversize or broken PDF', async () => {
    failed(await client.callTool({ name: 'get_envelope', arguments: { envelopeId: '00000000-0000-4000-8000-000000000000' } }), 'ENVELOPE_NOT_FOUND');
    failed(await client.callTool({ name: 'get_envelope_status', arguments: { envelopeId: 'not-a-uuid' } }), 'ENVELOPE_NOT_FOUND');
    const other = await t.createCustomer(500);
    const theirs = await createEnvelope(t, { title: 'Theirs', recipients: [signer(1)] }, { apiKey: other.apiKey });
    for (const name of ['get_envelope', 'get_envelope_status', 'download_envelope', 'cancel_envelope', 'resend_envelope']) {
      failed(await client.callTool({ name, arguments: { envelopeId: theirs.envelopeId } }), 'ENVELOPE_NOT_FOUND');
    }
    failed(await client.callTool({ name: 'send_envelope', arguments: { envelopeId: theirs.envelopeId, idempotencyKey: newKey() } }), 'ENVELOPE_NOT_FOUND');
    assert.equal((await t.app.inject({ url: `/v1/envelopes/${theirs.envelopeId}/status`, headers: bearer(other.apiKey) })).json().status, 'PENDING', 'untouched');

    const before = (await account(t)).creditsCents;
    const call = (pdfBase64: string) => client.callTool({ name: 'create_envelope', arguments: { pdfBase64, recipients: [signer(1)], fields: [sigField(signer(1).email)], idempotencyKey: newKey() } });
    const tooLarge = failed(await call(b64(new Uint8Array(MAX_PDF_BYTES + 1))), 'PDF_TOO_LARGE');
    assert.equal(tooLarge.maxBytes, MAX_PDF_BYTES);
    failed(await call(b64(new TextEncoder().encode('not a pdf at all'))), 'INVALID_PDF');
    failed(await call('***'), 'VALIDATION_ERROR');
    failed(await call(''), 'MISSING_PDF');
    assert.equal((await account(t)).creditsCents, before);
  });

  test('unknown tools and bad arguments are the SDK\'s own errors', async () => {
    const outcome = (p: Promise<CallResult>) => p.then((r) => (assert.equal(r.isError, true), JSON.stringify(r.content)), (err: Error) => err.message);
    assert.match(await outcome(client.callTool({ name: 'no_such_tool', arguments: {} })), /no_such_tool/);
    assert.match(await outcome(client.callTool({ name: 'create_envelope', arguments: { pdfBase64: 'JVBERi0=', recipients: [] } })), /idempotencyKey|recipients/);
    assert.match(await outcome(client.callTool({ name: 'list_envelopes', arguments: { limit: 1000 } })), /limit/);
  });

  test('a test key acts in test mode: sandboxed, never charged', async () => {
    const testClient = await connect(base, bearer(t.customer.testApiKey));
    try {
      const before = await account(t, t.customer.testApiKey);
      const created = ok<{ envelopeId: string }>(
        await testClient.callTool({ name: 'create_envelope', arguments: { pdfBase64: b64(await samplePdf()), recipients: [signer(1)], fields: [sigField(signer(1).email)], idempotencyKey: newKey() } }),
      );
      const after = await account(t, t.customer.testApiKey);
      assert.equal(after.creditsCents, before.creditsCents);
      assert.equal(after.sandboxUsed, before.sandboxUsed + 1);
      // Test data and live data do not see each other.
      failed(await client.callTool({ name: 'get_envelope', arguments: { envelopeId: created.envelopeId } }), 'ENVELOPE_NOT_FOUND');
    } finally {
      await testClient.close();
    }
  });

  test('no credentials, or a bad one: 401 before any JSON-RPC (x402 off)', async () => {
    const none = await rpc(base, initialize);
    assert.equal(none.status, 401);
    assert.equal((await none.json()).code, 'UNAUTHORIZED');
    const bad = await rpc(base, initialize, bearer('svc_live_0123456789abcdef0123456789abcdef'));
    assert.equal(bad.status, 401);
    assert.equal((await bad.json()).code, 'UNAUTHORIZED');
    await assert.rejects(connect(base, {}), /401|Unauthorized|UNAUTHORIZED/);
  });

  test('GET and DELETE /mcp: 405 with Allow: POST', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${base}/mcp`, { method, headers: { ...bearer(t.customer.apiKey), accept: 'text/event-stream' } });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal((await res.json()).code, 'METHOD_NOT_ALLOWED');
    }
  });

  test('two callers interleaved: each tools/call answers its own caller, with its own request id', async () => {
    // The servers behind POST /mcp are kept between requests: the caller must come with each request, never stay on a server.
    const other = await t.createCustomer(500);
    const callers = [t.customer, other];
    const unknown = { envelopeId: '00000000-0000-4000-8000-000000000000' };
    await Promise.all(Array.from({ length: 16 }, async (_, i) => {
      const who = callers[i % 2];
      // The same JSON-RPC ids from both callers, as two clients send them.
      const res = await rpc(base, [toolCall(1, 'get_account', {}), toolCall(2, 'get_envelope_status', unknown)], { ...bearer(who.apiKey), ...PROTOCOL });
      assert.equal(res.status, 200);
      const answers = (await res.json()) as { id: number; result: { structuredContent: Record<string, unknown> } }[];
      const byId = new Map(answers.map((a) => [a.id, a.result.structuredContent]));
      assert.equal(byId.get(1)?.accountId, who.id, `call ${i}: another caller's account`);
      assert.equal(byId.get(2)?.code, 'ENVELOPE_NOT_FOUND');
      assert.equal(byId.get(2)?.requestId, res.headers.get('x-request-id'), `call ${i}: another request's id`);
    }));
  });

  test("Streamable HTTP's edges: 406 without both answer types, 400 for an unknown protocol version or a bad message, 202 for notifications only; one message in, one answer out, a batch answered in order", async () => {
    const auth = bearer(t.customer.apiKey);
    const jsonOnly = await rpc(base, toolCall(1, 'get_account', {}), { ...auth, ...PROTOCOL, accept: 'application/json' });
    assert.equal(jsonOnly.status, 406);
    assert.equal((await jsonOnly.json()).error.code, -32000);
    const oldVersion = await rpc(base, toolCall(1, 'get_account', {}), { ...auth, 'mcp-protocol-version': '1999-01-01' });
    assert.equal(oldVersion.status, 400);
    assert.equal((await oldVersion.json()).error.code, -32000);
    const notJsonRpc = await rpc(base, { hello: 'world' }, { ...auth, ...PROTOCOL });
    assert.equal(notJsonRpc.status, 400);
    assert.equal((await notJsonRpc.json()).error.code, -32700);
    const notification = await rpc(base, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...auth, ...PROTOCOL });
    assert.equal(notification.status, 202);
    assert.equal(await notification.text(), '');
    const single = await rpc(base, toolCall(7, 'get_account', {}), { ...auth, ...PROTOCOL });
    const answer = await single.json();
    assert.ok(!Array.isArray(answer) && answer.id === 7 && answer.result, JSON.stringify(answer));
    const batch = await (await rpc(base, [toolCall(8, 'get_account', {}), toolCall(9, 'get_account', {})], { ...auth, ...PROTOCOL })).json();
    assert.deepEqual(batch.map((a: { id: number }) => a.id), [8, 9]);
  });

  test('the answer carries the request id and the rate-limit headers, as REST does', async () => {
    const res = await rpc(base, initialize, { ...bearer(t.customer.apiKey), 'x-request-id': 'mcp-req-1' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-request-id'), 'mcp-req-1');
    assert.ok(res.headers.get('ratelimit-limit'));
    assert.equal((await res.json()).result.serverInfo.name, 'Signet');
  });

  test('an Idempotency-Key header is not REST\'s to reserve on /mcp (the key is per tools/call)', async () => {
    const headers = { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'mcp-protocol-version': '2025-06-18' };
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_account', arguments: {} } };
    for (let i = 0; i < 2; i++) {
      const res = await rpc(base, call, headers);
      assert.equal(res.status, 200);
      assert.equal((await res.json()).result.isError, undefined);
    }
  });
});

describe('POST /mcp switches and limits', () => {
  test('MCP_ENABLED=false: 503 MCP_DISABLED, with or without credentials', async () => {
    const t = await createTestApp({ env: { MCP_ENABLED: 'false' } });
    try {
      for (const headers of [{}, bearer(t.customer.apiKey)]) {
        const res = await t.app.inject({ method: 'POST', url: '/mcp', headers: { ...headers, accept: ACCEPT }, payload: initialize });
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(res.json().code, 'MCP_DISABLED');
      }
    } finally {
      await t.close();
    }
  });

  test('the rate limit counts MCP requests per customer as on REST', async () => {
    const t = await createTestApp({ env: { RATE_LIMIT_MAX: '3' } });
    try {
      const send = () => t.app.inject({ method: 'POST', url: '/mcp', headers: { ...bearer(t.customer.apiKey), accept: ACCEPT }, payload: initialize });
      for (let i = 0; i < 3; i++) assert.equal((await send()).statusCode, 200);
      const limited = await send();
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.json().code, 'RATE_LIMITED');
    } finally {
      await t.close();
    }
  });

  test('each tools/call of a JSON-RPC batch counts once against the rate limit', async () => {
    const t = await createTestApp({ env: { RATE_LIMIT_MAX: '5' } });
    try {
      const batch = [1, 2, 3].map((id) => toolCall(id, 'get_account', {}));
      const send = () => t.app.inject({ method: 'POST', url: '/mcp', headers: { ...bearer(t.customer.apiKey), ...PROTOCOL, accept: ACCEPT }, payload: batch });
      const first = await send();
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(first.json().length, 3);
      assert.equal(first.headers['ratelimit-remaining'], '2', 'three calls of five');
      const limited = await send();
      assert.equal(limited.statusCode, 429, limited.body);
      assert.equal(limited.json().code, 'RATE_LIMITED');
      assert.ok(Number(limited.headers['retry-after']) > 0);
      assert.equal(limited.headers['ratelimit-remaining'], '0');
    } finally {
      await t.close();
    }
  });

  test('x402 on: a caller with no credentials may discover the tools (initialize, tools/list); a read tools/call is still 401', async () => {
    const t = await createTestApp({
      env: { X402_FACILITATOR_URL: 'http://127.0.0.1:9', X402_NETWORK: 'eip155:84532', X402_ASSET: `0x${'a'.repeat(40)}`, X402_PAY_TO: `0x${'b'.repeat(40)}`, X402_ASSET_NAME: 'USDC' },
    });
    try {
      const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
      const client = await connect(base, {});
      const { tools } = await client.listTools();
      assert.equal(tools.length, ALL_TOOLS.length);
      await client.close();
      const read = await rpc(base, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_envelope', arguments: { envelopeId: 'x' } } }, { 'mcp-protocol-version': '2025-06-18' });
      assert.equal(read.status, 401);
      assert.equal((await read.json()).code, 'UNAUTHORIZED');
    } finally {
      await t.close();
    }
  });
});

describe('POST /mcp batches and answer sizes (DESIGN §4.19)', () => {
  const INLINE_MAX_BYTES = 2048;
  let t: TestApp;
  let base: string;
  let client: Client;
  before(async () => {
    t = await createTestApp({ env: { MCP_INLINE_MAX_BYTES: String(INLINE_MAX_BYTES) } });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = await connect(base, bearer(t.customer.apiKey));
  });
  after(async () => {
    await client?.close();
    await t?.close();
  });

  type Download = { envelopeId: string; sizeBytes: number; pdfBase64?: string; downloadUrl: string };
  const draftOf = async (pdf: Uint8Array) =>
    ok<{ envelopeId: string }>(await client.callTool({ name: 'create_draft', arguments: { pdfBase64: b64(pdf), title: 'Budget', recipients: [signer(1)] } })).envelopeId;
  /** downloadUrl is under PUBLIC_URL (http://signet.test); the same path on this server. */
  const fetchLink = (url: string, headers: Record<string, string>) => {
    const { pathname, search } = new URL(url);
    return fetch(`${base}${pathname}${search}`, { headers });
  };

  test('a batch of more than 10 messages is 400 MCP_BATCH_TOO_LARGE, and none of its calls runs', async () => {
    const before = (await t.container.db.select().from(envelopes)).length;
    const calls = Array.from({ length: 11 }, (_, i) => toolCall(i + 1, 'create_draft', { pdfBase64: 'JVBERi0=', recipients: [signer(1)] }));
    const res = await rpc(base, calls, bearer(t.customer.apiKey));
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.code, 'MCP_BATCH_TOO_LARGE');
    assert.equal(body.maxBatch, 10);
    assert.equal((await t.container.db.select().from(envelopes)).length, before);
    const ten = await rpc(base, calls.slice(0, 10).map((c) => ({ ...c, params: { name: 'get_account', arguments: {} } })), { ...bearer(t.customer.apiKey), ...PROTOCOL });
    assert.equal(ten.status, 200);
    assert.equal((await ten.json()).length, 10);
  });

  test('download_envelope: a batch shares one inline budget; past it the answer is downloadUrl, which the caller fetches with its own credentials', async () => {
    const pdf = await samplePdf();
    assert.ok(pdf.byteLength <= INLINE_MAX_BYTES && 2 * pdf.byteLength > INLINE_MAX_BYTES, 'one copy fits the budget, two do not');
    const id = await draftOf(pdf);
    const res = await rpc(base, [1, 2, 3].map((n) => toolCall(n, 'download_envelope', { envelopeId: id, version: 'original' })), { ...bearer(t.customer.apiKey), ...PROTOCOL });
    assert.equal(res.status, 200);
    const answers = ((await res.json()) as { result: { structuredContent: Download; content: { text: string }[] } }[]).map((a) => a.result);
    const inlined = answers.filter((a) => a.structuredContent.pdfBase64 !== undefined);
    assert.equal(inlined.length, 1, 'one PDF inlined for the whole request');
    assert.deepEqual(new Uint8Array(Buffer.from(inlined[0].structuredContent.pdfBase64!, 'base64')), pdf);
    for (const linked of answers.filter((a) => a.structuredContent.pdfBase64 === undefined)) {
      assert.equal(linked.structuredContent.sizeBytes, pdf.byteLength);
      assert.match(linked.content[0].text, /GET http:\/\/signet\.test\/v1\/envelopes\/.+\/download\?version=original with the same Authorization header/);
      const file = await fetchLink(linked.structuredContent.downloadUrl, bearer(t.customer.apiKey));
      assert.equal(file.status, 200);
      assert.equal(file.headers.get('content-type'), 'application/pdf');
      assert.deepEqual(new Uint8Array(await file.arrayBuffer()), pdf);
      assert.equal((await fetchLink(linked.structuredContent.downloadUrl, {})).status, 401, 'the link is no credential itself');
    }
  });

  test('download_envelope: a PDF over the budget is never inlined; the SDK client accepts the linked answer', async () => {
    const pdf = await makePdf(12);
    assert.ok(pdf.byteLength > INLINE_MAX_BYTES);
    const id = await draftOf(pdf);
    const file = ok<Download>(await client.callTool({ name: 'download_envelope', arguments: { envelopeId: id, version: 'original' } }));
    assert.equal(file.pdfBase64, undefined);
    assert.equal(file.sizeBytes, pdf.byteLength);
    const { tools } = await client.listTools();
    const schema = tools.find((x) => x.name === 'download_envelope')!;
    assert.match(schema.description!, /downloadUrl/);
    assert.match(JSON.stringify(schema.outputSchema), /same Authorization header/);
    assert.deepEqual(new Uint8Array(await (await fetchLink(file.downloadUrl, bearer(t.customer.apiKey))).arrayBuffer()), pdf);
  });
});

describe('the tool runner (real database and idempotency core, the SDK in memory)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  const logged: string[] = [];
  const log = { error: (_o: object, msg: string) => void logged.push(msg), warn: (_o: object, msg: string) => void logged.push(msg) };

  async function callWith(tool: ReturnType<typeof defineTool>, args: Record<string, unknown>) {
    const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const endpoint = createMcpEndpoint({ db: t.container.db, idempotency: t.container.idempotency, tools: [tool], version: 'test', inlineMaxBytes: 1024 });
    const ctx = { actor: { customerId: t.customer.id, mode: 'live' as const, via: 'api_key' as const, keyId: null }, requestId: 'req-runner', ip: '127.0.0.1', testModeHeader: false };
    const server = await endpoint.server();
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'runner', version: '1' });
    await Promise.all([server.connect(a), client.connect(b)]);
    // The caller rides with each message, as the HTTP transport passes it from req.auth.
    const deliver = a.onmessage!;
    const authInfo = endpoint.authInfo({ ctx, onReceipt: () => undefined, log });
    a.onmessage = (message, extra) => deliver(message, { ...extra, authInfo });
    try {
      await client.listTools();
      return await client.callTool({ name: tool.name, arguments: args });
    } finally {
      await client.close();
    }
  }

  test('an unexpected error is INTERNAL_ERROR with a log line, never its message or stack', async () => {
    const boom = defineTool({ name: 'boom', title: 'Boom', description: 'Throws.', input: {}, output: { ok: z.boolean() }, mutates: false, run: async () => { throw new Error('secret SQL detail'); }, text: () => '' });
    const result = await callWith(boom, {});
    const content = failed(result, 'INTERNAL_ERROR');
    assert.ok(!JSON.stringify(result).includes('secret SQL detail'));
    assert.equal(content.requestId, 'req-runner');
    assert.ok(logged.includes('MCP tool failed'));
  });

  test('a 5xx under an idempotencyKey releases the key; a retry runs again', async () => {
    let runs = 0;
    const flaky = defineTool({
      name: 'flaky',
      title: 'Flaky',
      description: 'Fails once.',
      input: { idempotencyKey: z.string() },
      output: { runs: z.number() },
      mutates: true,
      run: (tc) => tc.mutate(async () => {
        runs++;
        if (runs === 1) throw new AppError('DOCUMENSO_UNAVAILABLE', 'engine down');
        return { runs };
      }),
      text: (r) => `${r.runs}`,
    });
    const idempotencyKey = newKey();
    failed(await callWith(flaky, { idempotencyKey }), 'DOCUMENSO_UNAVAILABLE');
    assert.deepEqual(ok(await callWith(flaky, { idempotencyKey })), { runs: 2 });
    assert.deepEqual(ok(await callWith(flaky, { idempotencyKey })), { runs: 2 }, 'replayed');
    assert.equal(runs, 2);
  });

  test('a mutating tool must answer what its mutate returned (what a replay answers)', async () => {
    const reshaping = defineTool({
      name: 'reshaping',
      title: 'Reshaping',
      description: 'Wraps its result after the commit.',
      input: { idempotencyKey: z.string().optional() },
      output: { wrapped: z.object({ n: z.number() }) },
      mutates: true,
      run: async (tc) => ({ wrapped: await tc.mutate(async () => ({ n: 1 })) }),
      text: () => '',
    });
    failed(await callWith(reshaping, { idempotencyKey: newKey() }), 'INTERNAL_ERROR');
  });
});
