/**
 * Templates (issue 10): a PDF with its recipient slots and fields saved once, then envelopes made from
 * it with only names and emails. Slot `id`s are 1-based positions; each from-template call maps every
 * slot to exactly one person.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { auditLog, envelopes, templates } from '../src/db/schema/index.js';
import { BLOB_SWEEP_JOB } from '../src/engine/local/blob-sweep.js';
import { enqueue } from '../src/jobs/queue.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import {
  account,
  assertError,
  drain,
  type Envelope,
  envelopeBody,
  eventTypes,
  getEnvelope,
  ledger,
  ledgerFor,
  makePdf,
  multipart,
  newKey,
  outbox,
  postMultipart,
  recipientToken,
  samplePdf,
  signAs,
  toOf,
  uniq,
} from './fixtures/envelopes.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MAX_PDF_BYTES = 300_000;

let t: TestApp;
before(async () => {
  t = await createTestApp({ env: { MAX_PDF_BYTES: String(MAX_PDF_BYTES) } });
});
after(() => t?.close());

type Slot = { email: string; name: string; role: string; signingOrder?: number; verificationRequired?: boolean; fields?: unknown[] };
type Template = {
  templateId: string;
  title: string;
  type: string;
  recipients: (Slot & { id: number })[];
  fields: { fieldId: number; type: string; page: number; positionX: number; positionY: number; width: number; height: number; positionXPercent: number; recipientId: number; recipientEmail: string }[];
  detectedFromPlaceholders: boolean;
  meta: Record<string, string>;
  createdAt: string;
  updatedAt: string;
};

const slot = (n: number, extra: Partial<Slot> = {}): Slot => ({ email: `slot${n}@example.com`, name: `Slot ${n}`, role: 'SIGNER', ...extra });
const twoSlots = () => [slot(1, { signingOrder: 1 }), slot(2, { signingOrder: 2 })];

let markerPdfP: Promise<Uint8Array> | undefined;
/** One page with `{{signature, r1}}`, `{{signature, r2}}` and `{{date, r1}}`. */
const markerPdf = () =>
  (markerPdfP ??= makePdf([
    [
      { text: 'Mutual NDA', x: 72, y: 720 },
      { text: '{{signature, r1}}', x: 72, y: 600 },
      { text: '{{signature, r2}}', x: 306, y: 600 },
      { text: '{{date, r1}}', x: 72, y: 560 },
    ],
  ]));

function templateBody(payload: unknown, pdf: Uint8Array | null, part = 'file') {
  return multipart([...(pdf ? [{ name: part, value: pdf, filename: 'nda.pdf' }] : []), { name: 'payload', value: typeof payload === 'string' ? payload : JSON.stringify(payload) }]);
}

const postTemplate = (mp: { body: Buffer; contentType: string }, apiKey = t.customer.apiKey) =>
  t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(apiKey), 'content-type': mp.contentType }, payload: mp.body });

/** A template from the marker PDF (two signer slots); asserts 201. */
async function createTemplate(apiKey = t.customer.apiKey, payload: Record<string, unknown> = {}): Promise<Template> {
  const res = await postTemplate(templateBody({ title: 'NDA', recipients: twoSlots(), ...payload }, await markerPdf()), apiKey);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as Template;
}

const json = (method: 'GET' | 'PUT' | 'DELETE' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}, apiKey = t.customer.apiKey) =>
  t.app.inject({ method, url, headers: { ...bearer(apiKey), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });

const people = () => [
  { id: 1, email: uniq('alice'), name: 'Alice' },
  { id: 2, email: uniq('bob'), name: 'Bob' },
];

const fromTemplate = (id: string, body: Record<string, unknown>, opts: { apiKey?: string; key?: string | null } = {}) =>
  json('POST', `/v1/templates/${id}/from-template`, body, opts.key === null ? {} : { 'idempotency-key': opts.key ?? newKey() }, opts.apiKey);

const fromTemplateAlt = (body: Record<string, unknown>, opts: { apiKey?: string; key?: string } = {}) =>
  json('POST', '/v1/envelopes/from-template', body, { 'idempotency-key': opts.key ?? newKey() }, opts.apiKey);

/** The customer's debits (the ledger also holds the opening credit). */
const debits = async (customerId: string) => (await ledger(t, customerId)).filter((e) => e.direction === 'debit');

const blobPath = (key: string) => path.join(t.config.dataDir, 'blobs', ...key.split('/'));
const templateKey = (id: string) => `templates/${id}/document.pdf`;

async function auditActions(resourceId: string): Promise<string[]> {
  const rows = await t.container.db.select().from(auditLog).where(eq(auditLog.resourceId, resourceId));
  return rows.map((r) => r.action);
}

describe('POST /v1/templates', () => {
  test('markers: slots get ids 1..n, fields are detected with the envelopes detection and sizing, the PDF is stored', async () => {
    const res = await postTemplate(templateBody({ title: 'NDA', recipients: twoSlots(), meta: { subject: 'Please sign the NDA', message: 'Thanks' } }, await markerPdf()));
    assert.equal(res.statusCode, 201, res.body);
    const tpl = res.json() as Template;
    assert.match(tpl.templateId, UUID);
    assert.equal(tpl.title, 'NDA');
    assert.equal(tpl.type, 'PRIVATE');
    assert.deepEqual(
      tpl.recipients.map((r) => [r.id, r.email, r.role, r.signingOrder]),
      [
        [1, 'slot1@example.com', 'SIGNER', 1],
        [2, 'slot2@example.com', 'SIGNER', 2],
      ],
    );
    assert.equal(tpl.detectedFromPlaceholders, true);
    assert.deepEqual(tpl.meta, { subject: 'Please sign the NDA', message: 'Thanks' });
    assert.ok(tpl.createdAt && tpl.updatedAt);
    assert.deepEqual(
      tpl.fields.map((f) => [f.fieldId, f.type, f.recipientId, f.recipientEmail]),
      [
        [1, 'SIGNATURE', 1, 'slot1@example.com'],
        [2, 'SIGNATURE', 2, 'slot2@example.com'],
        [3, 'DATE', 1, 'slot1@example.com'],
      ],
    );

    // The same PDF sent as an envelope with markers places its fields at the same boxes.
    const draft = await postMultipart(t, envelopeBody([await markerPdf()], { recipients: twoSlots(), fields: [] }), { url: '/v1/envelopes/draft' });
    assert.equal(draft.statusCode, 201, draft.body);
    const box = (f: { type: string; page: number; positionX: number; positionY: number; width: number; height: number }) => [f.type, f.page, f.positionX, f.positionY, f.width, f.height];
    assert.deepEqual(tpl.fields.map(box), (draft.json() as Envelope).fields.map(box));

    const stored = await t.container.storage.get(templateKey(tpl.templateId));
    assert.deepEqual(Buffer.from(stored!), Buffer.from(await markerPdf()));
    assert.deepEqual(await auditActions(tpl.templateId), ['template.create']);
  });

  test('explicit fields name their slot by recipientId or by recipientEmail; a `pdf` part is accepted as the file', async () => {
    const payload = {
      title: 'Explicit',
      recipients: [slot(1), slot(2, { verificationRequired: true }), slot(3, { role: 'CC' })],
      fields: [
        { type: 'SIGNATURE', recipientId: 1, page: 2, positionX: 10, positionY: 70, width: 25, height: 6 },
        { type: 'SIGNATURE', recipientEmail: 'SLOT2@example.com', page: 1, positionXPercent: 50, positionYPercent: 70, widthPercent: 25, heightPercent: 6 },
        { type: 'CHECKBOX', recipientId: 2, page: 1, positionX: 5, positionY: 5, width: 3, height: 3 },
      ],
    };
    const res = await postTemplate(templateBody(payload, await samplePdf(), 'pdf'));
    assert.equal(res.statusCode, 201, res.body);
    const tpl = res.json() as Template;
    assert.equal(tpl.detectedFromPlaceholders, false);
    assert.deepEqual(
      tpl.fields.map((f) => [f.type, f.recipientId, f.recipientEmail, f.page, f.positionX, f.positionXPercent]),
      [
        ['SIGNATURE', 1, 'slot1@example.com', 2, 10, 10],
        ['SIGNATURE', 2, 'slot2@example.com', 1, 50, 50],
        ['CHECKBOX', 2, 'slot2@example.com', 1, 5, 5],
      ],
    );
    assert.deepEqual(
      tpl.recipients.map((r) => [r.id, r.role, r.verificationRequired]),
      [
        [1, 'SIGNER', false],
        [2, 'SIGNER', true],
        [3, 'CC', false],
      ],
    );
  });

  test('the Alt form: fields nested in their slot', async () => {
    const nested = { type: 'SIGNATURE', page: 1, positionX: 10, positionY: 70, width: 25, height: 6 };
    const res = await postTemplate(templateBody({ title: 'Nested', recipients: [slot(1), slot(2, { fields: [nested] })], fields: [{ ...nested, recipientId: 1 }] }, await samplePdf()));
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual((res.json() as Template).fields.map((f) => [f.fieldId, f.recipientId]), [[1, 1], [2, 2]]);
  });

  test('upload errors: MISSING_FILE, MISSING_PAYLOAD, INVALID_JSON, VALIDATION_ERROR, INVALID_PDF, PDF_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE', async () => {
    const pdf = await markerPdf();
    const ok = { title: 'x', recipients: twoSlots() };
    assertError(await postTemplate(templateBody(ok, null)), 400, 'MISSING_FILE');
    assertError(await postTemplate(multipart([{ name: 'file', value: pdf, filename: 'a.pdf' }])), 400, 'MISSING_PAYLOAD');
    assertError(await postTemplate(templateBody('{"title": ', pdf)), 400, 'INVALID_JSON');
    const noTitle = assertError(await postTemplate(templateBody({ recipients: twoSlots() }, pdf)), 400, 'VALIDATION_ERROR');
    assert.equal(noTitle.details[0].path, 'payload.title');
    assertError(await postTemplate(templateBody(ok, Buffer.from('%PDF-1.7 not really a pdf'))), 400, 'INVALID_PDF');
    assertError(await postTemplate(templateBody(ok, Buffer.alloc(MAX_PDF_BYTES + 1, 0x20))), 413, 'PDF_TOO_LARGE');
    assertError(await json('POST', '/v1/templates', ok), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('slot rules: RECIPIENT_NOT_FOUND for an unknown slot, unique emails, 1..10 signers, a SIGNATURE field for every signer', async () => {
    const pdf = await samplePdf();
    const sig = (ref: Record<string, unknown>) => ({ type: 'SIGNATURE', page: 1, positionX: 10, positionY: 70, width: 25, height: 6, ...ref });
    assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1)], fields: [sig({ recipientId: 3 })] }, pdf)), 404, 'RECIPIENT_NOT_FOUND');
    assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1)], fields: [sig({ recipientEmail: 'nobody@example.com' })] }, pdf)), 404, 'RECIPIENT_NOT_FOUND');
    const neither = assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1)], fields: [sig({})] }, pdf)), 400, 'VALIDATION_ERROR');
    assert.match(neither.details[0].path, /^payload\.fields\.0/);
    const mismatch = assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1), slot(2)], fields: [sig({ recipientId: 1, recipientEmail: 'slot2@example.com' }), sig({ recipientId: 2 })] }, pdf)), 400, 'VALIDATION_ERROR');
    assert.equal(mismatch.details[0].path, 'payload.fields.0.recipientEmail');
    const dup = assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1), slot(1)] }, await markerPdf())), 400, 'VALIDATION_ERROR');
    assert.equal(dup.details[0].path, 'payload.recipients.1.email');
    const eleven = Array.from({ length: 11 }, (_, i) => slot(i + 1));
    assertError(await postTemplate(templateBody({ title: 'x', recipients: eleven, fields: eleven.map((s) => sig({ recipientEmail: s.email })) }, pdf)), 400, 'OUT_OF_SCOPE_V1');
    assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1, { role: 'CC' })] }, pdf)), 400, 'VALIDATION_ERROR');
    // Every envelope made from a template must be sendable: each SIGNER slot needs a SIGNATURE field.
    const unsigned = assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1), slot(2)], fields: [sig({ recipientId: 1 })] }, pdf)), 400, 'VALIDATION_ERROR');
    assert.equal(unsigned.details[0].path, 'payload.recipients.1');
    const r3 = assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1)] }, await markerPdf())), 400, 'VALIDATION_ERROR');
    assert.match(r3.error, /r2/);
    assertError(await postTemplate(templateBody({ title: 'x', recipients: [slot(1)], fields: [sig({ recipientId: 1, page: 3 })] }, pdf)), 400, 'VALIDATION_ERROR');
  });
});

describe('GET, PUT and DELETE /v1/templates', () => {
  test('list: newest first, items carry type, both paging forms; a test key sees only test templates', async () => {
    const c = await t.createCustomer(0);
    const a = await createTemplate(c.apiKey, { title: 'First' });
    const b = await createTemplate(c.apiKey, { title: 'Second' });
    const testOnly = await createTemplate(c.testApiKey, { title: 'Test mode' });

    const page1 = await json('GET', '/v1/templates?limit=1', undefined, {}, c.apiKey);
    assert.equal(page1.statusCode, 200, page1.body);
    const { data: _data, ...wrapper } = page1.json() as Record<string, unknown>;
    assert.deepEqual(wrapper, { total: 2, limit: 1, offset: 0 });
    assert.equal(page1.json().data[0].templateId, b.templateId);
    assert.equal(page1.json().data[0].type, 'PRIVATE');
    assert.equal(page1.json().data[0].recipients.length, 2);

    const alt = (await json('GET', '/v1/templates?page=2&perPage=1', undefined, {}, c.apiKey)).json();
    assert.deepEqual({ total: alt.total, page: alt.page, perPage: alt.perPage }, { total: 2, page: 2, perPage: 1 });
    assert.deepEqual(alt.data.map((x: Template) => x.templateId), [a.templateId]);

    const asTest = (await json('GET', '/v1/templates', undefined, {}, c.testApiKey)).json();
    assert.deepEqual(asTest.data.map((x: Template) => x.templateId), [testOnly.templateId]);
    assertError(await json('GET', `/v1/templates/${testOnly.templateId}`, undefined, {}, c.apiKey), 404, 'TEMPLATE_NOT_FOUND');
    assertError(await json('GET', `/v1/templates/${a.templateId}`, undefined, {}, c.testApiKey), 404, 'TEMPLATE_NOT_FOUND');
    assertError(await json('GET', '/v1/templates?limit=101', undefined, {}, c.apiKey), 400, 'VALIDATION_ERROR');
  });

  test('get: the full template; INVALID_ID for a non-UUID, TEMPLATE_NOT_FOUND for an unknown or foreign one', async () => {
    const tpl = await createTemplate();
    const res = await json('GET', `/v1/templates/${tpl.templateId}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), tpl);
    assertError(await json('GET', '/v1/templates/not-a-uuid'), 400, 'INVALID_ID');
    assertError(await json('GET', `/v1/templates/${randomUUID()}`), 404, 'TEMPLATE_NOT_FOUND');
    const other = await t.createCustomer(0);
    assertError(await json('GET', `/v1/templates/${tpl.templateId}`, undefined, {}, other.apiKey), 404, 'TEMPLATE_NOT_FOUND');
  });

  test('update: title and meta; an empty body is VALIDATION_ERROR; INVALID_ID, TEMPLATE_NOT_FOUND', async () => {
    const tpl = await createTemplate(undefined, { meta: { subject: 'Old subject', message: 'Old' } });
    const res = await json('PUT', `/v1/templates/${tpl.templateId}`, { title: 'NDA v2', meta: { subject: 'New subject' } });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.templateId, tpl.templateId);
    assert.equal(body.title, 'NDA v2');
    assert.ok(body.updatedAt >= tpl.updatedAt);
    const got = (await json('GET', `/v1/templates/${tpl.templateId}`)).json() as Template;
    assert.equal(got.title, 'NDA v2');
    assert.deepEqual(got.meta, { subject: 'New subject' });
    assert.deepEqual(got.fields, tpl.fields);

    assertError(await json('PUT', `/v1/templates/${tpl.templateId}`, {}), 400, 'VALIDATION_ERROR');
    assertError(await json('PUT', `/v1/templates/${tpl.templateId}`, { title: '' }), 400, 'VALIDATION_ERROR');
    assertError(await json('PUT', '/v1/templates/123', { title: 'x' }), 400, 'INVALID_ID');
    assertError(await json('PUT', `/v1/templates/${randomUUID()}`, { title: 'x' }), 404, 'TEMPLATE_NOT_FOUND');
    assert.deepEqual(await auditActions(tpl.templateId), ['template.create', 'template.update']);
  });

  test('delete: 204 (Alt 200 {success: true}); the job removes the PDF, safely twice; an envelope made before still signs and downloads', async () => {
    const tpl = await createTemplate(undefined, { title: 'Short-lived' });
    const [alice, bob] = people();
    const made = await fromTemplate(tpl.templateId, { recipients: [alice, bob] });
    assert.equal(made.statusCode, 201, made.body);
    const env = made.json() as Envelope;

    const del = await json('DELETE', `/v1/templates/${tpl.templateId}`);
    assert.equal(del.statusCode, 204, del.body);
    assert.equal(del.body, '');
    assertError(await json('GET', `/v1/templates/${tpl.templateId}`), 404, 'TEMPLATE_NOT_FOUND');
    assertError(await json('DELETE', `/v1/templates/${tpl.templateId}`), 404, 'TEMPLATE_NOT_FOUND');
    assertError(await json('DELETE', '/v1/templates/nope'), 400, 'INVALID_ID');
    assertError(await fromTemplate(tpl.templateId, { recipients: [alice, bob] }), 404, 'TEMPLATE_NOT_FOUND');
    assert.ok(existsSync(blobPath(templateKey(tpl.templateId))), 'the blob goes in a job, after the commit');
    assert.deepEqual(await auditActions(tpl.templateId), ['template.create', 'template.use', 'template.delete']);

    await drain(t);
    assert.equal(existsSync(blobPath(templateKey(tpl.templateId))), false, 'the delete job removed the PDF');
    const [job] = rowsOf<{ payload: unknown }>(await t.container.db.execute(sql`SELECT payload FROM jobs WHERE type = 'template.delete-document' ORDER BY id DESC LIMIT 1`));
    await t.container.db.transaction((tx) => enqueue(tx, { type: 'template.delete-document', payload: job.payload }));
    await drain(t); // a second run finds nothing to delete and succeeds

    // The envelope kept its own copy of the PDF: it signs, seals and downloads.
    await signAs(t, recipientToken(env, alice.email));
    await signAs(t, recipientToken(env, bob.email));
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
    const dl = await json('GET', `/v1/envelopes/${env.envelopeId}/download`);
    assert.equal(dl.statusCode, 200, dl.body);
    assert.equal(dl.rawPayload.subarray(0, 5).toString(), '%PDF-');
    const original = await json('GET', `/v1/envelopes/${env.envelopeId}/download?version=original`);
    assert.deepEqual(original.rawPayload, Buffer.from(await markerPdf()));

    const alt = await createTemplate();
    const altDel = await json('DELETE', `/v1/templates/${alt.templateId}?alt=1`);
    assert.equal(altDel.statusCode, 200, altDel.body);
    assert.deepEqual(altDel.json(), { success: true });
  });
});

describe('envelopes from a template', () => {
  test('POST /v1/templates/{id}/from-template: PENDING with links, USD 0.10 as envelope_from_template, then SENT; template meta is the default', async () => {
    const c = await t.createCustomer(500);
    const tpl = await createTemplate(c.apiKey, { meta: { subject: 'Template subject', message: 'From the template' } });
    const [alice, bob] = people();
    // Listed out of slot order: the envelope's recipients follow the slots.
    const res = await fromTemplate(tpl.templateId, { recipients: [bob, alice] }, { apiKey: c.apiKey });
    assert.equal(res.statusCode, 201, res.body);
    const env = res.json() as Envelope;
    assert.match(env.envelopeId, UUID);
    assert.equal(env.status, 'PENDING');
    assert.equal(env.title, 'NDA');
    assert.ok(env.createdAt);
    assert.deepEqual(
      env.recipients.map((r) => [r.name, r.email, r.role, r.signingOrder]),
      [
        ['Alice', alice.email, 'SIGNER', 1],
        ['Bob', bob.email, 'SIGNER', 2],
      ],
    );
    assert.ok(env.recipients.every((r) => /^http:\/\/signet\.test\/sign\//.test(r.signingUrl)));
    assert.deepEqual(
      env.fields.map((f) => [f.type, f.recipientEmail, f.positionX]),
      tpl.fields.map((f) => [f.type, f.recipientId === 1 ? alice.email : bob.email, f.positionX]),
    );
    assert.equal(env.detectedFromPlaceholders, true);

    const charged = await ledgerFor(t, env.envelopeId, 'debit');
    assert.deepEqual(charged.map((d) => [d.operation, d.amountMicros]), [['envelope_from_template', 100_000n]]);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);

    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId, c.apiKey)).status, 'SENT');
    assert.equal((await eventTypes(t, env.envelopeId)).filter((e) => e === 'DOCUMENT_SENT').length, 1);
    const invite = (await outbox(t)).find((m) => toOf(m).includes(alice.email.toLowerCase()));
    assert.equal(invite?.subject, 'Template subject');

    // The call's meta overrides the template's.
    const [carol, dan] = [
      { id: 1, email: uniq('carol'), name: 'Carol' },
      { id: 2, email: uniq('dan'), name: 'Dan' },
    ];
    const custom = await fromTemplate(tpl.templateId, { title: 'NDA for Carol', recipients: [carol, dan], meta: { subject: 'Custom subject' } }, { apiKey: c.apiKey });
    assert.equal(custom.statusCode, 201, custom.body);
    assert.equal(custom.json().title, 'NDA for Carol');
    await drain(t);
    assert.equal((await outbox(t)).find((m) => toOf(m).includes(carol.email.toLowerCase()))?.subject, 'Custom subject');
    const [row] = await t.container.db.select().from(envelopes).where(eq(envelopes.id, custom.json().envelopeId));
    assert.deepEqual(row.meta, { subject: 'Custom subject', message: 'From the template' });
  });

  test('the Alt form POST /v1/envelopes/from-template {templateId, ...}', async () => {
    const tpl = await createTemplate();
    const res = await fromTemplateAlt({ templateId: tpl.templateId, title: 'Alt', sendImmediately: true, storageExpiryDays: 400, recipients: people() });
    assert.equal(res.statusCode, 201, res.body);
    const env = res.json() as Envelope;
    assert.equal(env.status, 'PENDING');
    assert.equal(env.title, 'Alt');
    assert.ok(env.storageExpiresAt && new Date(env.storageExpiresAt as string).getTime() > Date.now() + 399 * 86_400_000);
    assertError(await fromTemplateAlt({ templateId: 'nope', recipients: people() }), 400, 'INVALID_TEMPLATE_ID');
    assertError(await fromTemplateAlt({ templateId: randomUUID(), recipients: people() }), 404, 'TEMPLATE_NOT_FOUND');
    assertError(await fromTemplateAlt({ recipients: people() }), 400, 'VALIDATION_ERROR');
  });

  test('slot mapping: every id names a slot, every slot mapped once, emails unique', async () => {
    const debitsBefore = (await ledger(t, t.customer.id)).length;
    const tpl = await createTemplate();
    const [alice, bob] = people();
    const unknown = assertError(await fromTemplate(tpl.templateId, { recipients: [alice, { ...bob, id: 9 }] }), 400, 'INVALID_TEMPLATE_RECIPIENT_ID');
    assert.equal(unknown.details[0].path, 'body.recipients.1.id');
    const unmapped = assertError(await fromTemplate(tpl.templateId, { recipients: [alice] }), 404, 'RECIPIENT_NOT_FOUND');
    assert.match(unmapped.error, /slot 2/);
    const twice = assertError(await fromTemplate(tpl.templateId, { recipients: [alice, { ...bob, id: 1 }] }), 400, 'VALIDATION_ERROR');
    assert.equal(twice.details[0].path, 'body.recipients.1.id');
    const sameEmail = assertError(await fromTemplate(tpl.templateId, { recipients: [alice, { ...bob, email: alice.email.toUpperCase() }] }), 400, 'VALIDATION_ERROR');
    assert.equal(sameEmail.details[0].path, 'body.recipients.1.email');
    assertError(await fromTemplate(tpl.templateId, { recipients: [] }), 400, 'VALIDATION_ERROR');
    assertError(await fromTemplate(tpl.templateId, { recipients: [alice, bob], expiresAt: '2000-01-01T00:00:00Z' }), 400, 'VALIDATION_ERROR');
    assertError(await fromTemplate('not-a-uuid', { recipients: [alice, bob] }), 400, 'INVALID_TEMPLATE_ID');
    assertError(await fromTemplate(randomUUID(), { recipients: [alice, bob] }), 404, 'TEMPLATE_NOT_FOUND');
    assert.equal((await ledger(t, t.customer.id)).length, debitsBefore, 'no refused call was charged');
  });

  test('sendImmediately false: a free DRAFT; its send is charged once as envelope_send', async () => {
    const c = await t.createCustomer(500);
    const tpl = await createTemplate(c.apiKey);
    const res = await fromTemplate(tpl.templateId, { sendImmediately: false, recipients: people() }, { apiKey: c.apiKey });
    assert.equal(res.statusCode, 201, res.body);
    const draft = res.json() as Envelope;
    assert.equal(draft.status, 'DRAFT');
    assert.equal((await debits(c.id)).length, 0);

    const key = newKey();
    const sent = await json('POST', `/v1/envelopes/${draft.envelopeId}/send`, {}, { 'idempotency-key': key }, c.apiKey);
    assert.equal(sent.statusCode, 200, sent.body);
    assert.equal(sent.json().status, 'SENT');
    const again = await json('POST', `/v1/envelopes/${draft.envelopeId}/send`, {}, { 'idempotency-key': key }, c.apiKey);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual((await debits(c.id)).map((e) => [e.operation, e.amountMicros, e.envelopeId]), [['envelope_send', 100_000n, draft.envelopeId]]);
    await drain(t);
    assert.equal((await eventTypes(t, draft.envelopeId)).filter((e) => e === 'DOCUMENT_SENT').length, 1);
  });

  test('an idempotent replay answers the same envelope and debits once', async () => {
    const c = await t.createCustomer(500);
    const tpl = await createTemplate(c.apiKey);
    const body = { recipients: people() };
    const key = newKey();
    const first = await fromTemplate(tpl.templateId, body, { apiKey: c.apiKey, key });
    const second = await fromTemplate(tpl.templateId, body, { apiKey: c.apiKey, key });
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(second.statusCode, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.json().envelopeId, first.json().envelopeId);
    assert.equal((await debits(c.id)).length, 1);
    const list = (await json('GET', '/v1/envelopes', undefined, {}, c.apiKey)).json();
    assert.equal(list.total, 1);
    assertError(await fromTemplate(tpl.templateId, body, { apiKey: c.apiKey, key: null }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
  });

  test('a balance that cannot pay is 402 and creates nothing; a test key is free and sees its own templates only', async () => {
    const broke = await t.createCustomer(0);
    const tpl = await createTemplate(broke.apiKey);
    assertError(await fromTemplate(tpl.templateId, { recipients: people() }), 404, 'TEMPLATE_NOT_FOUND');
    const res = await fromTemplate(tpl.templateId, { recipients: people() }, { apiKey: broke.apiKey });
    const body = assertError(res, 402, 'INSUFFICIENT_BALANCE');
    assert.equal(body.priceMicros, 100_000);
    const count = await t.container.db.select().from(envelopes).where(eq(envelopes.customerId, broke.id));
    assert.equal(count.length, 0);
    // A draft is not charged, so it goes through.
    assert.equal((await fromTemplate(tpl.templateId, { sendImmediately: false, recipients: people() }, { apiKey: broke.apiKey })).statusCode, 201);

    assertError(await fromTemplate(tpl.templateId, { recipients: people() }, { apiKey: broke.testApiKey }), 404, 'TEMPLATE_NOT_FOUND');
    const testTpl = await createTemplate(broke.testApiKey);
    const free = await fromTemplate(testTpl.templateId, { recipients: people() }, { apiKey: broke.testApiKey });
    assert.equal(free.statusCode, 201, free.body);
    assert.equal((await account(t, broke.apiKey)).sandboxUsed, 1);
    assert.equal((await ledger(t, broke.id)).length, 0);
  });

  test('X-Service-Test-Mode: true makes a from-template send a free test send, as on create-and-send', async () => {
    const c = await t.createCustomer(500);
    const tpl = await createTemplate(c.apiKey);
    const res = await json('POST', `/v1/templates/${tpl.templateId}/from-template`, { recipients: people() }, { 'idempotency-key': newKey(), 'x-service-test-mode': 'true' }, c.apiKey);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal((await debits(c.id)).length, 0);
    assert.equal((await account(t, c.apiKey)).sandboxUsed, 1);
  });

  test("a stored PDF that does not match the template's checksum is refused, with nothing charged", async () => {
    const c = await t.createCustomer(500);
    const tpl = await createTemplate(c.apiKey);
    await t.container.storage.put(templateKey(tpl.templateId), await samplePdf());
    const res = await fromTemplate(tpl.templateId, { recipients: people() }, { apiKey: c.apiKey });
    assert.equal(res.statusCode, 500, res.body);
    assert.equal((await debits(c.id)).length, 0);
  });
});

describe('sweep of unreferenced template blobs', () => {
  test('an orphan under templates/ older than the grace is removed; a live template and a recent orphan are kept', async () => {
    const live = await createTemplate();
    const orphan = templateKey(randomUUID());
    const recent = templateKey(randomUUID());
    for (const key of [orphan, recent]) await t.container.storage.put(key, Buffer.from('%PDF-1.7 orphan'));
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    for (const key of [orphan, templateKey(live.templateId)]) utimesSync(blobPath(key), twoHoursAgo, twoHoursAgo);

    await t.container.db.transaction((tx) => enqueue(tx, { type: BLOB_SWEEP_JOB, payload: {} }));
    await drain(t);
    assert.equal(existsSync(blobPath(orphan)), false, 'the orphan was collected');
    assert.ok(existsSync(blobPath(templateKey(live.templateId))), 'a template row references it');
    assert.ok(existsSync(blobPath(recent)), 'a recent blob may belong to a transaction still open');
    const [row] = await t.container.db.select().from(templates).where(and(eq(templates.id, live.templateId)));
    assert.equal(row.documentKey, templateKey(live.templateId));
  });
});
