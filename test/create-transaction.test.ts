/**
 * The shape of the billable transactions (DESIGN §4.13, issue 14): a create-and-send stores its
 * document before its transaction opens, writes its rows without reading anything back, and charges
 * last, so the customer's balance row is locked for the end of the transaction only. Observed through
 * the statements drizzle sends and the order of blob writes, on PGlite and on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Logger } from 'drizzle-orm/logger';
import { createLocalStorage } from '../src/providers/storage/index.js';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { drain, envelopeBody, makePdf, multipart, newKey, postMultipart, samplePdf } from './fixtures/envelopes.js';
import { loggedDatabase } from './fixtures/logged-database.js';
import { bearer, createTestApp, type TestApp } from './harness.js';

type Entry = { kind: 'sql' | 'put'; text: string };
const log: Entry[] = [];
let recording = false;
const logger: Logger = { logQuery: (query) => void (recording && log.push({ kind: 'sql', text: query.trim().toLowerCase() })) };


let t: TestApp;
let dataDir: string;
before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'signet-create-tx-'));
  const blobs = createLocalStorage(path.join(dataDir, 'blobs'));
  const storage = {
    ...blobs,
    async put(key: string, bytes: Uint8Array) {
      if (recording) log.push({ kind: 'put', text: key });
      await blobs.put(key, bytes);
    },
    // An upload is stored from the file it was streamed to.
    async putFile(key: string, file: string) {
      if (recording) log.push({ kind: 'put', text: key });
      await blobs.putFile(key, file);
    },
  };
  t = await createTestApp({ creditCents: 10_000, overrides: { database: await loggedDatabase(dataDir, logger), storage } });
});
after(async () => {
  await t.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const signer = (n: number) => ({ email: `s${n}@example.com`, name: `Signer ${n}`, role: 'SIGNER' });
const sig = (email: string, y: number) => ({ type: 'SIGNATURE', recipientEmail: email, page: 1, positionX: 10, positionY: y, width: 30, height: 6 });

async function recorded<T>(work: () => Promise<T>): Promise<{ value: T; entries: Entry[] }> {
  log.length = 0;
  recording = true;
  try {
    return { value: await work(), entries: [...log] };
  } finally {
    recording = false;
  }
}

const index = (entries: Entry[], pattern: RegExp) => entries.findIndex((e) => pattern.test(e.text));
/** The engine's document, its first row (written with its recipients, fields and event in one statement). */
const FIRST_ROW = /^(with d as \(\s*)?insert into "?engine_documents/;
const isDebit = /^with debited as|update "customers" set "balance_micros"/;

async function createAndSend(draft = false) {
  const body = envelopeBody([await samplePdf()], { title: 'Shape', draft, recipients: [signer(1), signer(2)], fields: [sig(signer(1).email, 70), sig(signer(2).email, 80)] });
  const res = await postMultipart(t, body, { apiKey: t.customer.apiKey, key: newKey() });
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { envelopeId: string };
}

test('create-and-send: the document is stored first, the rows are written without a read, and the charge is the last write', async () => {
  await createAndSend(); // warms the key cache: the measured call is the steady state
  const { entries } = await recorded(() => createAndSend());

  const put = index(entries, /\/original\.pdf$/);
  const firstRow = index(entries, FIRST_ROW);
  const finish = index(entries, /^update "idempotency_keys"/);
  assert.ok(put >= 0 && firstRow > put, `the original is stored before the first row:\n${entries.map((e) => e.text.slice(0, 60)).join('\n')}`);
  // BEGIN is a statement on node-postgres; PGlite opens its transactions without one.
  const begin = index(entries, /^begin/);
  if (begin >= 0) assert.ok(begin > put, 'and before the transaction opens');

  const inTransaction = entries.slice(firstRow, finish).filter((e) => e.kind === 'sql');
  assert.deepEqual(inTransaction.filter((e) => e.text.startsWith('select')).map((e) => e.text.slice(0, 80)), [], 'nothing is read back inside the transaction');
  // The engine's rows; the envelope's rows with its audit row and its job (CTEs); the charge.
  assert.ok(inTransaction.length <= 3, `a handful of statements, got ${inTransaction.length}:\n${inTransaction.map((e) => e.text.slice(0, 60)).join('\n')}`);
  assert.match(inTransaction.at(-1)!.text, isDebit, 'the charge (debit and its ledger row, one statement) is the last write before the idempotent answer');
});

test('send of a draft: the charge is the last write, after the invitations and the audit row', async () => {
  const { envelopeId } = await createAndSend(true);
  const { value: res, entries } = await recorded(() =>
    t.app.inject({ method: 'POST', url: `/v1/envelopes/${envelopeId}/send`, headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' }, payload: {} }),
  );
  assert.equal(res.statusCode, 200, res.body);
  const writes = entries.filter((e) => e.kind === 'sql' && /^(insert|update|delete|with)/.test(e.text));
  const debit = writes.findIndex((e) => isDebit.test(e.text));
  assert.ok(debit >= 0, 'the send was charged');
  assert.ok(index(writes, /^insert into "?audit_log/) < debit, 'the audit row comes before the charge');
  assert.match(writes.at(-1)!.text, /^update "idempotency_keys"/);
  assert.equal(debit, writes.length - 2, `the debit is the last write before the idempotent answer:\n${writes.map((e) => e.text.slice(0, 60)).join('\n')}`);
});

test('events that no webhook endpoint takes build no payload: a send reads its fields once, for its own check', async () => {
  const { envelopeId } = await createAndSend(true);
  const { value: res, entries } = await recorded(() =>
    t.app.inject({ method: 'POST', url: `/v1/envelopes/${envelopeId}/send`, headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' }, payload: {} }),
  );
  assert.equal(res.statusCode, 200, res.body);
  assert.ok(entries.some((e) => /from "webhooks"/.test(e.text)), 'the endpoints were looked up');
  const fieldReads = entries.filter((e) => /^select .* from "envelope_fields"/.test(e.text));
  assert.equal(fieldReads.length, 1, `the fields are read by the send's check only:\n${fieldReads.map((e) => e.text.slice(0, 80)).join('\n')}`);
});

test('an envelope from a template: the same shape, its template.use audit row before the charge', async () => {
  const pdf = await makePdf([[{ text: '{{signature, r1}}', x: 72, y: 600 }]]);
  const tpl = multipart([{ name: 'file', value: pdf, filename: 't.pdf' }, { name: 'payload', value: JSON.stringify({ title: 'T', recipients: [{ email: 'slot1@example.com', name: 'Slot 1', role: 'SIGNER' }] }) }]);
  const made = await t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(t.customer.apiKey), 'content-type': tpl.contentType }, payload: tpl.body });
  assert.equal(made.statusCode, 201, made.body);
  const { templateId } = made.json() as { templateId: string };
  const { value: res, entries } = await recorded(() =>
    t.app.inject({
      method: 'POST',
      url: `/v1/templates/${templateId}/from-template`,
      headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' },
      payload: { sendImmediately: true, recipients: [{ id: 1, email: 'alice@example.com', name: 'Alice' }] },
    }),
  );
  assert.equal(res.statusCode, 201, res.body);
  const put = index(entries, /\/original\.pdf$/);
  const firstRow = index(entries, FIRST_ROW);
  assert.ok(put >= 0 && firstRow > put, 'the copy of the template is stored before the first row');
  const writes = entries.slice(firstRow).filter((e) => e.kind === 'sql' && /^(insert|update|delete|with)/.test(e.text));
  assert.match(writes.at(-1)!.text, /^update "idempotency_keys"/);
  assert.match(writes.at(-2)!.text, isDebit, `the debit is the last write before the idempotent answer:\n${writes.map((e) => e.text.slice(0, 60)).join('\n')}`);
  const audited = writes.flatMap((e) => e.text.match(/insert into "?audit_log/g) ?? []);
  assert.equal(audited.length, 2, 'the template.use and envelope.create audit rows are in the transaction');
  assert.ok(writes.length <= 4, `the engine's rows, the envelope's (with both audit rows and the job), the charge, the answer; got:\n${writes.map((e) => e.text.slice(0, 60)).join('\n')}`);
});

test("a send's engine writes (SENT, its event, the invitations' jobs and the recipients' marks) are one statement, and so are its sync's", async () => {
  const { envelopeId } = await createAndSend(true);
  const { value: res, entries } = await recorded(() =>
    t.app.inject({ method: 'POST', url: `/v1/envelopes/${envelopeId}/send`, headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' }, payload: {} }),
  );
  assert.equal(res.statusCode, 200, res.body);
  const engineWrites = entries.filter((e) => e.kind === 'sql' && /^(insert|update|with)/.test(e.text) && /engine_(documents|events|recipients)|into jobs/.test(e.text) && !/envelope_/.test(e.text));
  assert.equal(engineWrites.length, 1, `one statement:\n${engineWrites.map((e) => e.text.replace(/\s+/g, ' ').slice(0, 100)).join('\n')}`);
  const [write] = engineWrites;
  for (const part of [/update engine_documents/, /insert into engine_events/, /insert into jobs/, /update engine_recipients set notified_at/]) assert.match(write.text.replace(/\s+/g, ' '), part);
  // The stored copy catches up (recipients SENT, the envelope SENT, envelope.sent) in one statement too.
  const syncWrites = entries.filter((e) => e.kind === 'sql' && /envelope_events|envelope_recipients/.test(e.text) && /^(insert|update|with)/.test(e.text));
  assert.equal(syncWrites.length, 1, `one statement:\n${syncWrites.map((e) => e.text.replace(/\s+/g, ' ').slice(0, 100)).join('\n')}`);
  for (const part of [/update envelope_recipients/, /update envelopes set status/, /insert into envelope_events/]) assert.match(syncWrites[0].text.replace(/\s+/g, ' '), part);
});

test("a create-and-send's jobs (its distribution, its two invitations) are marked done by the worker's claims, none by a statement of its own", async () => {
  const { envelopeId } = await createAndSend();
  const { entries } = await recorded(() => drain(t));
  const jobs = rowsOf<{ type: string; status: string }>(await t.container.db.execute(sql`SELECT type, status FROM jobs WHERE type IN ('envelope.distribute', 'email.send') ORDER BY id DESC LIMIT 3`));
  assert.deepEqual(jobs.map((j) => j.status), ['done', 'done', 'done'], JSON.stringify(jobs));
  const env = await t.app.inject({ url: `/v1/envelopes/${envelopeId}`, headers: bearer(t.customer.apiKey) });
  assert.equal((env.json() as { status: string }).status, 'SENT');
  // A completion of one job alone (`WHERE id = $1`) is a statement the claim that follows would have carried.
  const single = entries.filter((e) => e.kind === 'sql' && /^update jobs set status = 'done'/.test(e.text.replace(/\s+/g, ' ').trim()) && !/id = any/.test(e.text));
  assert.equal(single.length, 0, single.map((e) => e.text.replace(/\s+/g, ' ').slice(0, 120)).join('\n'));
});
