/**
 * Bulk send (issue 37, item 3): one envelope per row from a template, rows as JSON or CSV, checked up
 * front (refused rows listed, never charged), created by jobs exactly once each, cancellable, with an
 * opt-in bulk_send.completed webhook.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { bulkSendRows, envelopes, ledgerEntries } from '../src/db/schema/index.js';
import { createBulkRunner } from '../src/modules/bulk-sends/bulk-sends.jobs.js';
import { createBulkSendsRepo } from '../src/modules/bulk-sends/bulk-sends.repo.js';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { assertError, drain, multipart, newKey, samplePdf, sigField, signer } from './fixtures/envelopes.js';

const MAX_BYTES = 100_000;
let t: TestApp;
before(async () => {
  t = await createTestApp({ creditCents: 10_000, env: { BULK_SEND_MAX_BYTES: String(MAX_BYTES), WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
});
after(() => t?.close());

/** A template with one SIGNER slot (id 1) whose SIGNATURE field is fieldId 1, and a TEXT field (fieldId 2). */
async function templateOf(customer: TestCustomer = t.customer, apiKey = customer.apiKey, app: TestApp = t): Promise<string> {
  const mp = multipart([
    { name: 'file', value: await samplePdf(), filename: 't.pdf' },
    { name: 'payload', value: JSON.stringify({ title: 'Bulk', recipients: [signer(1)], fields: [sigField(signer(1).email), sigField(signer(1).email, { type: 'TEXT', positionYPercent: 50 })] }) },
  ]);
  const res = await app.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(apiKey), 'content-type': mp.contentType }, payload: mp.body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().templateId;
}

const row = (n: number, extra: Record<string, unknown> = {}) => ({ recipients: [{ id: 1, email: `bulk${n}-${Math.random().toString(36).slice(2, 8)}@example.com`, name: `Bulk ${n}` }], ...extra });

type Send = { apiKey?: string; key?: string | null; headers?: Record<string, string>; payload?: unknown; body?: string | Buffer };
const post = (templateId: string, o: Send = {}) =>
  t.app.inject({
    method: 'POST',
    url: `/v1/templates/${templateId}/bulk-sends`,
    headers: { ...bearer(o.apiKey ?? t.customer.apiKey), ...(o.key === null ? {} : { 'idempotency-key': o.key ?? newKey() }), ...o.headers },
    ...(o.body !== undefined ? { body: o.body } : { payload: o.payload as object }),
  });
const get = (id: string, apiKey = t.customer.apiKey, query = '') => t.app.inject({ url: `/v1/bulk-sends/${id}${query}`, headers: bearer(apiKey) });
const cancel = (id: string, apiKey = t.customer.apiKey) => t.app.inject({ method: 'POST', url: `/v1/bulk-sends/${id}/cancel`, headers: bearer(apiKey) });

async function debits(customerId: string): Promise<number> {
  const rows = await t.container.db.select().from(ledgerEntries).where(and(eq(ledgerEntries.customerId, customerId), eq(ledgerEntries.direction, 'debit')));
  return rows.length;
}
async function envelopeCount(customerId: string): Promise<number> {
  return (await t.container.db.select({ id: envelopes.id }).from(envelopes).where(eq(envelopes.customerId, customerId))).length;
}
const runner = () => createBulkRunner({ db: t.container.db, repo: createBulkSendsRepo(), templates: t.container.templates, publish: t.container.webhooks.fanOutOptIn });

describe('create and progress', () => {
  test('JSON rows: accepted rows become sent envelopes, a refused row is listed and not charged', async () => {
    const customer = await t.createCustomer(1000);
    const templateId = await templateOf(customer);
    const rows = [row(1, { title: 'Row one', meta: { subject: 'Sign row one' }, prefill: { '2': 'ACME Ltd' } }), { recipients: [{ id: 9, email: 'x@example.com', name: 'X' }] }, row(3), { recipients: 5 }, row(5, { prefill: { '77': 'no such field' } })];
    const res = await post(templateId, { apiKey: customer.apiKey, payload: { rows } });
    assert.equal(res.statusCode, 202, res.body);
    const created = res.json();
    assert.equal(created.status, 'QUEUED');
    assert.deepEqual(created.counts, { total: 5, accepted: 2, refused: 3, pending: 2, created: 0, failed: 0, skipped: 0 });
    assert.deepEqual(created.refusedRows.map((r: { index: number; code: string }) => [r.index, r.code]), [[1, 'INVALID_TEMPLATE_RECIPIENT_ID'], [3, 'VALIDATION_ERROR'], [4, 'FIELD_PREFILL_INVALID']]);
    assert.match(created.refusedRows[2].message, /prefill\.77/);

    await drain(t);
    const done = (await get(created.bulkSendId, customer.apiKey)).json();
    assert.equal(done.status, 'COMPLETED');
    assert.deepEqual(done.counts, { total: 5, accepted: 2, refused: 3, pending: 0, created: 2, failed: 0, skipped: 0 });
    assert.ok(done.endedAt);
    const byIndex = new Map(done.rows.map((r: { index: number }) => [r.index, r]));
    const first = byIndex.get(0) as { envelopeId: string; status: string };
    assert.equal(first.status, 'CREATED');
    const env = (await t.app.inject({ url: `/v1/envelopes/${first.envelopeId}`, headers: bearer(customer.apiKey) })).json();
    assert.equal(env.title, 'Row one');
    assert.ok(['PENDING', 'SENT'].includes(env.status), env.status);
    assert.equal(env.recipients[0].email, (rows[0].recipients as { email: string }[])[0].email);
    // The row's prefill reaches the envelope as the from-template create makes it: a read-only value.
    const text = env.fields.find((f: { type: string }) => f.type === 'TEXT');
    assert.deepEqual([text.value, text.readOnly], ['ACME Ltd', true]);
    assert.deepEqual((byIndex.get(1) as { error: unknown }).error, { code: 'INVALID_TEMPLATE_RECIPIENT_ID', message: created.refusedRows[0].message });
    assert.equal(await debits(customer.id), 2, 'one create-and-send per created row');
    assert.equal(await envelopeCount(customer.id), 2);
    // The list shows it, with its counts; rows page through rowsLimit/rowsOffset.
    const list = (await t.app.inject({ url: '/v1/bulk-sends', headers: bearer(customer.apiKey) })).json();
    assert.equal(list.total, 1);
    assert.equal(list.data[0].counts.created, 2);
    const page = (await get(created.bulkSendId, customer.apiKey, '?rowsLimit=2&rowsOffset=3')).json();
    assert.deepEqual(page.rows.map((r: { index: number }) => r.index), [3, 4]);
  });

  test('CSV rows, as a text/csv body and as a multipart file', async () => {
    const customer = await t.createCustomer(1000);
    const templateId = await templateOf(customer);
    const csv = 'recipients.1.email,recipients.1.name,title,meta.subject,prefill.2\r\ncsv1@example.com,"Doe, Jane",From CSV,"Say ""hi""",ACME\ncsv2@example.com,John,,,\n';
    const a = await post(templateId, { apiKey: customer.apiKey, body: csv, headers: { 'content-type': 'text/csv' } });
    assert.equal(a.statusCode, 202, a.body);
    assert.equal(a.json().counts.accepted, 2);
    const mp = multipart([{ name: 'file', value: 'recipients.1.email,recipients.1.name\ncsv3@example.com,Three\n', filename: 'rows.csv', contentType: 'text/csv' }]);
    const b = await post(templateId, { apiKey: customer.apiKey, body: mp.body, headers: { 'content-type': mp.contentType } });
    assert.equal(b.statusCode, 202, b.body);
    assert.equal(b.json().counts.accepted, 1);
    await drain(t);
    const done = (await get(a.json().bulkSendId, customer.apiKey)).json();
    assert.equal(done.counts.created, 2);
    const env = (await t.app.inject({ url: `/v1/envelopes/${done.rows[0].envelopeId}`, headers: bearer(customer.apiKey) })).json();
    assert.equal(env.title, 'From CSV');
    assert.equal(env.recipients[0].name, 'Doe, Jane');
    assert.equal(env.meta?.subject ?? env.subject ?? 'Say "hi"', 'Say "hi"');
    assert.equal((await get(b.json().bulkSendId, customer.apiKey)).json().counts.created, 1);
  });

  test('every row refused: 422 with the list, nothing stored or charged', async () => {
    const customer = await t.createCustomer(1000);
    const templateId = await templateOf(customer);
    const res = await post(templateId, { apiKey: customer.apiKey, payload: { rows: [{ recipients: [] }, { title: 3 }] } });
    assertError(res, 422, 'BULK_ROWS_REFUSED');
    assert.deepEqual(res.json().rows.map((r: { index: number }) => r.index), [0, 1]);
    assert.equal((await t.app.inject({ url: '/v1/bulk-sends', headers: bearer(customer.apiKey) })).json().total, 0);
  });

  test('402 before anything when the balance does not cover every accepted row', async () => {
    const customer = await t.createCustomer(25); // two rows at USD 0.10, not three
    const templateId = await templateOf(customer);
    const res = await post(templateId, { apiKey: customer.apiKey, payload: { rows: [row(1), row(2), row(3)] } });
    assertError(res, 402, 'INSUFFICIENT_BALANCE');
    assert.equal((await t.app.inject({ url: '/v1/bulk-sends', headers: bearer(customer.apiKey) })).json().total, 0);
    // A refused row costs nothing: two accepted rows fit.
    const ok = await post(templateId, { apiKey: customer.apiKey, payload: { rows: [row(1), row(2), { recipients: [] }] } });
    assert.equal(ok.statusCode, 202, ok.body);
  });

  test('one Idempotency-Key covers the batch: a replay answers the same bulk send, another body with it is refused', async () => {
    const customer = await t.createCustomer(1000);
    const templateId = await templateOf(customer);
    const key = newKey();
    const payload = { rows: [row(1), row(2)] };
    const a = await post(templateId, { apiKey: customer.apiKey, key, payload });
    const b = await post(templateId, { apiKey: customer.apiKey, key, payload });
    assert.equal(a.statusCode, 202, a.body);
    assert.equal(b.statusCode, 202, b.body);
    assert.equal(b.json().bulkSendId, a.json().bulkSendId);
    assertError(await post(templateId, { apiKey: customer.apiKey, key, payload: { rows: [row(3)] } }), 422, 'IDEMPOTENCY_KEY_REUSED');
    assertError(await post(templateId, { apiKey: customer.apiKey, key: null, payload }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
    await drain(t);
    assert.equal(await debits(customer.id), 2);
  });

  test('a test key makes test envelopes, counted against the sandbox, nothing charged', async () => {
    const customer = await t.createCustomer(1000);
    const templateId = await templateOf(customer, customer.testApiKey);
    const res = await post(templateId, { apiKey: customer.testApiKey, payload: { rows: [row(1), row(2)] } });
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json().testMode, true);
    await drain(t);
    const done = (await get(res.json().bulkSendId, customer.testApiKey)).json();
    assert.equal(done.counts.created, 2);
    const [env] = await t.container.db.select().from(envelopes).where(eq(envelopes.id, done.rows[0].envelopeId));
    assert.equal(env.mode, 'test');
    assert.equal(await debits(customer.id), 0);
    // A live key does not see a test bulk send.
    assertError(await get(res.json().bulkSendId, customer.apiKey), 404, 'BULK_SEND_NOT_FOUND');
  });
});

describe('cancel, crash safety, webhook', () => {
  test('cancel midway: rows created stay, the rest are skipped and not charged', async () => {
    // An app of its own whose worker never runs: this test plays the worker (the others drain side by side).
    const own = await createTestApp({ creditCents: 1000 });
    try {
      const templateId = await templateOf(own.customer, own.customer.apiKey, own);
      const res = await own.app.inject({ method: 'POST', url: `/v1/templates/${templateId}/bulk-sends`, headers: { ...bearer(own.customer.apiKey), 'idempotency-key': newKey() }, payload: { rows: Array.from({ length: 12 }, (_, i) => row(i)) } });
      assert.equal(res.statusCode, 202, res.body);
      const id = res.json().bulkSendId;
      const repo = createBulkSendsRepo();
      const r = createBulkRunner({ db: own.container.db, repo, templates: own.container.templates, publish: own.container.webhooks.fanOutOptIn });
      const bulk = await repo.findById(own.container.db, id);
      const claimed = await repo.claim(own.container.db, id, 'w-midway', 3, 60_000);
      const ctx = { actor: { customerId: own.customer.id, mode: 'live' as const, via: 'api_key' as const, keyId: null }, requestId: 'r', ip: '127.0.0.1', testModeHeader: false };
      for (const c of claimed) await r.createRow(bulk!, ctx, c, 'w-midway');
      // One more row is claimed by a worker that is still planning it when the cancel commits.
      const [inFlight] = await repo.claim(own.container.db, id, 'w-late', 1, 60_000);
      const getOwn = (path: string, method: 'GET' | 'POST' = 'GET') => own.app.inject({ method, url: path, headers: bearer(own.customer.apiKey) });
      const progress = (await getOwn(`/v1/bulk-sends/${id}`)).json();
      assert.equal(progress.status, 'QUEUED');
      assert.equal(progress.counts.created, 3);
      assert.equal(progress.counts.pending, 9);
      const cancelled = await getOwn(`/v1/bulk-sends/${id}/cancel`, 'POST');
      assert.equal(cancelled.statusCode, 200, cancelled.body);
      assert.equal(cancelled.json().status, 'CANCELLED');
      assert.deepEqual(cancelled.json().counts, { total: 12, accepted: 12, refused: 0, pending: 0, created: 3, failed: 0, skipped: 9 });
      await r.createRow(bulk!, ctx, inFlight, 'w-late');
      await drain(own);
      const after = (await getOwn(`/v1/bulk-sends/${id}`)).json();
      assert.equal(after.counts.created, 3);
      assert.equal(after.status, 'CANCELLED');
      const debitsOwn = await own.container.db.select().from(ledgerEntries).where(and(eq(ledgerEntries.customerId, own.customer.id), eq(ledgerEntries.direction, 'debit')));
      assert.equal(debitsOwn.length, 3);
      assert.equal((await own.container.db.select().from(envelopes).where(eq(envelopes.customerId, own.customer.id))).length, 3);
      assert.equal((await getOwn(`/v1/bulk-sends/${id}/cancel`, 'POST')).json().status, 'CANCELLED', 'cancelling again answers it as it is');
    } finally {
      await own.close();
    }
  });

  test('two workers racing on one bulk send create each row once; a stale claim after a takeover creates nothing', async () => {
    const customer = await t.createCustomer(1000);
    const templateId = await templateOf(customer);
    const res = await post(templateId, { apiKey: customer.apiKey, payload: { rows: Array.from({ length: 20 }, (_, i) => row(i)) } });
    const id = res.json().bulkSendId;
    const repo = createBulkSendsRepo();
    // Worker A claims two rows and "dies": its lease lapses.
    const stale = await repo.claim(t.container.db, id, 'w-dead', 2, 60_000);
    await t.container.db.update(bulkSendRows).set({ claimedUntil: sql`now() - interval '1 second'` }).where(eq(bulkSendRows.claimedBy, 'w-dead'));
    // Two live workers race over all the rows, the lapsed ones included.
    await Promise.all([runner().run(id, 'w-1'), runner().run(id, 'w-2')]);
    // The dead worker wakes up and tries to finish its stale claims: nothing happens.
    const bulk = await repo.findById(t.container.db, id);
    const ctx = { actor: { customerId: customer.id, mode: 'live' as const, via: 'api_key' as const, keyId: null }, requestId: 'r', ip: '127.0.0.1', testModeHeader: false };
    for (const c of stale) await runner().createRow(bulk!, ctx, c, 'w-dead');
    const rows = await t.container.db.select().from(bulkSendRows).where(eq(bulkSendRows.bulkSendId, id));
    assert.equal(rows.filter((r) => r.status === 'CREATED').length, 20);
    assert.equal(new Set(rows.map((r) => r.envelopeId)).size, 20);
    assert.equal(await envelopeCount(customer.id), 20, 'one envelope per row');
    assert.equal(await debits(customer.id), 20, 'one charge per row');
    assert.equal((await get(id, customer.apiKey)).json().status, 'COMPLETED');
    await drain(t);
  });

  test('bulk_send.completed goes only to a registration that names it', async () => {
    const customer = await t.createCustomer(1000);
    const received: { event: string; body: Record<string, unknown> }[] = [];
    const server: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ event: String(req.headers['x-service-event']), body: JSON.parse(body) });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      for (const [path, events] of [['all', ['*']], ['bulk', ['bulk_send.completed']]] as const) {
        const w = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(customer.apiKey), payload: { url: `http://127.0.0.1:${port}/${path}`, events } });
        assert.equal(w.statusCode, 201, w.body);
      }
      const templateId = await templateOf(customer);
      const res = await post(templateId, { apiKey: customer.apiKey, payload: { rows: [row(1), { recipients: [] }] } });
      await drain(t);
      const bulkEvents = received.filter((r) => r.event === 'bulk_send.completed');
      assert.equal(bulkEvents.length, 1, JSON.stringify(received.map((r) => r.event)));
      const bulkSend = bulkEvents[0].body.bulkSend as { bulkSendId: string; status: string; counts: { created: number; refused: number } };
      assert.equal(bulkSend.bulkSendId, res.json().bulkSendId);
      assert.equal(bulkSend.status, 'COMPLETED');
      assert.deepEqual([bulkSend.counts.created, bulkSend.counts.refused], [1, 1]);
      // The "*" registration got the envelope's own events, never the opt-in one.
      assert.ok(received.some((r) => r.event === 'envelope.sent'));
    } finally {
      server.close();
    }
  });
});

describe('bad input and other customers', () => {
  test('oversize: 1,001 rows, too many bytes (JSON and CSV)', async () => {
    const templateId = await templateOf();
    const tiny = { recipients: [{ id: 1, email: 'a@b.io', name: 'A' }] };
    assertError(await post(templateId, { payload: { rows: Array(1001).fill(tiny) } }), 413, 'TOO_MANY_ROWS');
    assertError(await post(templateId, { payload: { rows: [row(1, { title: 'x'.repeat(MAX_BYTES) })] } }), 413, 'PAYLOAD_TOO_LARGE');
    const csv = `recipients.1.email,recipients.1.name\n${'a@b.io,A\n'.repeat(1001)}`;
    assertError(await post(templateId, { body: csv, headers: { 'content-type': 'text/csv' } }), 413, 'TOO_MANY_ROWS');
    assertError(await post(templateId, { body: `title\n${'y'.repeat(MAX_BYTES)}\n`, headers: { 'content-type': 'text/csv' } }), 413, 'PAYLOAD_TOO_LARGE');
  });

  test('malformed CSV and JSON, wrong types', async () => {
    const templateId = await templateOf();
    const csv = (body: string) => post(templateId, { body, headers: { 'content-type': 'text/csv' } });
    assertError(await csv('recipients.1.email,recipients.1.name\n"a@b.io,A\n'), 400, 'INVALID_CSV');
    assertError(await csv('recipients.1.email,nickname\na@b.io,A\n'), 400, 'INVALID_CSV');
    assertError(await csv('recipients.1.email\na@b.io,extra\n'), 400, 'INVALID_CSV');
    assertError(await csv('recipients.1.email\n'), 400, 'INVALID_CSV');
    assertError(await csv('recipients.1.email\na\u0000@b.io\n'), 400, 'VALIDATION_ERROR');
    assertError(await post(templateId, { body: '{"rows": [', headers: { 'content-type': 'application/json' } }), 400, 'INVALID_JSON');
    assertError(await post(templateId, { payload: { rows: 'all of them' } }), 400, 'VALIDATION_ERROR');
    assertError(await post(templateId, { payload: { rows: [] } }), 400, 'VALIDATION_ERROR');
    assertError(await post(templateId, { payload: [row(1)] }), 400, 'VALIDATION_ERROR');
    assertError(await post('not-a-uuid', { payload: { rows: [row(1)] } }), 400, 'INVALID_TEMPLATE_ID');
  });

  test("another customer's template or bulk send is 404", async () => {
    const other = await t.createCustomer(1000);
    const theirs = await templateOf(other);
    assertError(await post(theirs, { payload: { rows: [row(1)] } }), 404, 'TEMPLATE_NOT_FOUND');
    const mine = await post(theirs, { apiKey: other.apiKey, payload: { rows: [row(1)] } });
    assert.equal(mine.statusCode, 202, mine.body);
    assertError(await get(mine.json().bulkSendId), 404, 'BULK_SEND_NOT_FOUND');
    assertError(await cancel(mine.json().bulkSendId), 404, 'BULK_SEND_NOT_FOUND');
    assertError(await get('nope'), 404, 'BULK_SEND_NOT_FOUND');
    const n = rowsOf<{ n: string }>(await t.container.db.execute(sql`SELECT count(*) AS n FROM bulk_sends WHERE customer_id = ${t.customer.id}`))[0].n;
    assert.equal(Number(n), 0);
    await drain(t);
  });
});
