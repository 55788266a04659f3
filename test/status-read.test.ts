/**
 * GET /v1/envelopes/{id}/status (and MCP get_envelope_status) reads the engine (it wins) without
 * queueing pollers on the envelope's lock, and without a transaction while the stored copy is in step:
 * one read on the pool, of the copy and the engine's state together (issues 14 and 38). A stale copy is still corrected
 * under the lock, with its event and its webhook. Observed through the statements drizzle sends, on
 * PGlite and on PostgreSQL; the lock test needs PostgreSQL (PGlite runs one statement at a time, so a
 * transaction holding the lock there blocks every read whatever the code does).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Logger } from 'drizzle-orm/logger';
import { rowsOf } from '../src/db/client.js';
import { createEnvelope, drain, envelopeBody, execSql, newKey, person, postMultipart, samplePdf } from './fixtures/envelopes.js';
import { loggedDatabase } from './fixtures/logged-database.js';
import { bearer, createTestApp, type TestApp } from './harness.js';

const onPostgres = Boolean(process.env.DATABASE_URL);

const log: string[] = [];
let recording = false;
const logger: Logger = { logQuery: (query) => void (recording && log.push(query.trim().toLowerCase().replace(/\s+/g, ' '))) };


let t: TestApp;
let dataDir: string;
before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'signet-status-read-'));
  t = await createTestApp({ creditCents: 1_000, env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' }, overrides: { database: await loggedDatabase(dataDir, logger) } });
});
after(async () => {
  await t.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function recorded<T>(work: () => Promise<T>): Promise<{ value: T; statements: string[] }> {
  log.length = 0;
  recording = true;
  try {
    return { value: await work(), statements: [...log] };
  } finally {
    recording = false;
  }
}

const status = (envelopeId: string) => t.app.inject({ url: `/v1/envelopes/${envelopeId}/status`, headers: bearer(t.customer.apiKey) });
const mcpStatus = (envelopeId: string) =>
  t.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_envelope_status', arguments: { envelopeId } } }),
  });

/** The statements of a status read, without the API key's (the resolver may touch last_used_at). */
const ofTheRead = (statements: string[]) => statements.filter((s) => !/"api_keys"|"customers"/.test(s));
const show = (statements: string[]) => statements.map((s) => s.slice(0, 100)).join('\n');

/**
 * An in-step read: one statement reads the stored copy and the engine's state (with the links), nothing
 * else; one row, whatever the number of recipients (each stored and engine recipient pair aggregated).
 */
function assertOneRead(statements: string[]) {
  const read = ofTheRead(statements);
  assert.equal(read.length, 1, `one statement, got ${read.length}:\n${show(read)}`);
  assert.match(read[0], /^select .*json_agg\(.* from envelope_recipients r left join engine_recipients er .* from "envelopes" left join "engine_documents" on [^()]* where/);
  assert.ok(!read.some((s) => /for update|^begin|^commit/.test(s)), 'no lock and no transaction');
}

test('in step, a status read is one read on the pool, no transaction, over REST and MCP', async () => {
  const [a, b] = [person('in-step-a'), person('in-step-b')];
  const env = await createEnvelope(t, { title: 'In step', recipients: [a, b] });
  assert.equal((await status(env.envelopeId)).statusCode, 200); // warms the key cache: the measured calls are the steady state

  const rest = await recorded(() => status(env.envelopeId));
  assert.equal(rest.value.statusCode, 200, rest.value.body);
  assertOneRead(rest.statements);
  const body = rest.value.json() as { status: string; recipients: { email: string; signingUrl: string }[] };
  assert.equal(body.status, 'PENDING');
  assert.deepEqual(
    body.recipients.map((r) => [r.email, r.signingUrl]),
    env.recipients.map((r) => [r.email, r.signingUrl]),
    'the links come with the engine read, in the recipients order',
  );

  const mcp = await recorded(() => mcpStatus(env.envelopeId));
  assert.equal(mcp.value.statusCode, 200, mcp.value.body);
  const answer = mcp.value.json() as { result: { isError?: boolean; structuredContent: unknown } };
  assert.ok(!answer.result.isError, mcp.value.body);
  assert.deepEqual(answer.result.structuredContent, body, 'the same answer as REST');
  assertOneRead(mcp.statements);
});

test('a stale copy is corrected under the envelope lock, with its event and its webhook; the next read is in step again', async () => {
  const s = person('stale');
  const env = await createEnvelope(t, { title: 'Stale', recipients: [s] });
  await drain(t);
  // After the distribution, so no delivery was queued (or attempted) before the one under test.
  const hook = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['*'] }) });
  assert.equal(hook.statusCode, 201, hook.body);
  // A change the stored copy missed.
  await execSql(t, sql`UPDATE engine_recipients SET read_status = 'OPENED', viewed_at = now() WHERE document_id = ${env.engineEnvelopeId}`);

  const stale = await recorded(() => status(env.envelopeId));
  assert.equal(stale.value.statusCode, 200, stale.value.body);
  const live = stale.value.json() as { status: string; recipients: { readStatus: string; viewedAt: string | null; signingUrl: string }[] };
  assert.equal(live.status, 'SENT');
  assert.equal(live.recipients[0].readStatus, 'OPENED', 'the engine wins');
  assert.ok(live.recipients[0].viewedAt);
  assert.equal(live.recipients[0].signingUrl, env.recipients[0].signingUrl);
  const locked = stale.statements.findIndex((x) => /^select .* from "envelopes" .*for update/.test(x));
  assert.ok(locked >= 0, `the envelope is locked:\n${show(stale.statements)}`);
  const corrected = stale.statements.findIndex((x) => /^(with r as \(\s*)?update "?envelope_recipients"?/.test(x));
  assert.ok(corrected > locked, 'and the copy corrected under the lock');

  const events = rowsOf<{ event_type: string; recipient_email: string }>(
    await t.container.db.execute(sql`SELECT event_type, recipient_email FROM envelope_events WHERE envelope_id = ${env.envelopeId} AND event_type = 'DOCUMENT_VIEWED'`),
  );
  assert.deepEqual(events, [{ event_type: 'DOCUMENT_VIEWED', recipient_email: s.email }]);
  const deliveries = rowsOf<{ event: string; payload: { envelope: { recipients: { readStatus: string }[] } } }>(
    await t.container.db.execute(sql`SELECT event, payload FROM webhook_deliveries WHERE envelope_id = ${env.envelopeId}`),
  );
  assert.deepEqual(deliveries.map((d) => d.event), ['envelope.viewed'], 'the webhook of the corrected move is queued');
  assert.equal(deliveries[0].payload.envelope.recipients[0].readStatus, 'OPENED');

  const again = await recorded(() => status(env.envelopeId));
  assert.deepEqual(again.value.json(), live, 'the corrected copy answers the same');
  assertOneRead(again.statements);
});

test('an engine recipient no stored recipient names still counts in the status (the document is then read alone)', async () => {
  const s = person('counted');
  const env = await createEnvelope(t, { title: 'Counted', recipients: [s] });
  // Every signer signed and the seal is pending: reported as the state before it, which depends on how many signers the engine has.
  await execSql(t, sql`INSERT INTO engine_recipients (document_id, position, email, name, role, link_salt) VALUES (${env.engineEnvelopeId}, 99, 'uncopied@example.com', 'Uncopied', 'SIGNER', 'c0ffee00c0ffee00c0ffee00c0ffee00')`);
  await execSql(t, sql`UPDATE engine_documents SET status = 'SEALING' WHERE id = ${env.engineEnvelopeId}`);
  const res = await status(env.envelopeId);
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json() as { status: string; recipients: { email: string }[] };
  assert.equal(body.status, 'PARTIALLY_SIGNED', 'two signers on the engine: the seal waits on a partial signing');
  assert.deepEqual(body.recipients.map((r) => r.email), [s.email], 'the answer lists the stored recipients');
});

test('an unknown or malformed id is ENVELOPE_NOT_FOUND, another customer\'s too', async () => {
  const env = await createEnvelope(t, { title: 'Mine', recipients: [person('mine')] });
  const other = await t.createCustomer(0);
  for (const [id, apiKey] of [['not-a-uuid', t.customer.apiKey], ['00000000-0000-4000-8000-000000000000', t.customer.apiKey], [env.envelopeId, other.apiKey]]) {
    const res = await t.app.inject({ url: `/v1/envelopes/${id}/status`, headers: bearer(apiKey) });
    assert.equal(res.statusCode, 404, res.body);
    assert.equal(res.json().code, 'ENVELOPE_NOT_FOUND');
  }
});

test('a status read in step answers while another transaction holds the envelope lock', { skip: onPostgres ? false : 'needs concurrent connections (DATABASE_URL)' }, async () => {
  const signer = { email: 's1@example.com', name: 'Signer 1', role: 'SIGNER' };
  const body = envelopeBody([await samplePdf()], { title: 'Polled', recipients: [signer], fields: [{ type: 'SIGNATURE', recipientEmail: signer.email, page: 1, positionX: 10, positionY: 70, width: 30, height: 6 }] });
  const created = await postMultipart(t, body, { apiKey: t.customer.apiKey, key: newKey() });
  assert.equal(created.statusCode, 201, created.body);
  const { envelopeId } = created.json() as { envelopeId: string };
  assert.equal((await status(envelopeId)).statusCode, 200); // in step from here on

  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const lockTaken = new Promise<void>((r) => (locked = r));
  const holder = t.container.db.transaction(async (tx) => {
    await tx.execute(sql`SELECT id FROM envelopes WHERE id = ${envelopeId} FOR UPDATE`);
    locked();
    await held;
  });
  await lockTaken;
  try {
    // A deadlock detector, not a timing: a read queued on the lock never answers while it is held.
    const outcome = await Promise.race([status(envelopeId).then((r) => r.statusCode), sleep(5_000).then(() => 'still waiting for the lock')]);
    assert.equal(outcome, 200);
  } finally {
    release();
    await holder;
  }
});
