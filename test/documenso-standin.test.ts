// test-lane: once (opens no database)
/**
 * The Documenso stand-in against the official SDK: every route the documenso engine uses answers what
 * the SDK's own schemas accept (the SDK validates each reply; a drifted shape throws), and the
 * stand-in behaves as Documenso's source does where the adapter depends on it (statuses, refusals,
 * webhooks).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Documenso } from '@documenso/sdk-typescript';
import { ResponseValidationError } from '@documenso/sdk-typescript/models/errors/responsevalidationerror.js';
import { type DocumensoStandin, type DocumensoWebhook, startDocumensoStandin } from './fixtures/documenso-standin.js';
import { plainPdf } from './fixtures/pdfs.js';
import { type Receiver, startReceiver } from './fixtures/receiver.js';

let standin: DocumensoStandin;
let receiver: Receiver;
let sdk: Documenso;
let pdf: Uint8Array;
const SECRET = 'whsec-standin-test';

before(async () => {
  receiver = await startReceiver();
  standin = await startDocumensoStandin({ webhook: { url: receiver.url('/engine/documenso/webhook'), secret: SECRET } });
  sdk = new Documenso({ serverURL: standin.url, apiKey: standin.apiKey });
  pdf = await plainPdf(2);
});
after(async () => {
  await standin.close();
  await receiver.close();
});

const download = (itemId: string, version: string) => fetch(`${standin.url}/envelope/item/${itemId}/download?version=${version}`, { headers: { authorization: standin.apiKey } });

/** A draft with a signer (signature on page 1), an approver and a CC, in signing order. */
async function draft(signingOrder: 'PARALLEL' | 'SEQUENTIAL' = 'SEQUENTIAL') {
  const { id } = await sdk.envelopes.create({
    payload: {
      title: 'Contract',
      type: 'DOCUMENT',
      externalId: 'env_signet_1',
      meta: { subject: 'Please sign', message: 'Thanks', signingOrder },
      recipients: [
        { email: 'ann@example.test', name: 'Ann', role: 'SIGNER', signingOrder: 1, fields: [{ type: 'SIGNATURE', identifier: 0, page: 1, positionX: 10, positionY: 80, width: 25, height: 5 }] },
        { email: 'bob@example.test', name: 'Bob', role: 'APPROVER', signingOrder: 2 },
        { email: 'cat@example.test', name: 'Cat', role: 'CC' },
      ],
    },
    files: [{ fileName: 'contract.pdf', content: pdf }],
  });
  return id;
}

const hooks = (from: number) => receiver.requests.slice(from).map((r) => JSON.parse(r.raw.toString('utf8')) as DocumensoWebhook);

describe('documenso stand-in × SDK', () => {
  test('every route the adapter uses answers what the SDK accepts', async () => {
    const envelopeId = await draft();
    assert.match(envelopeId, /^envelope_/);

    let env = await sdk.envelopes.get({ envelopeId });
    assert.equal(env.status, 'DRAFT');
    assert.equal(env.externalId, 'env_signet_1');
    assert.match(env.secondaryId, /^document_\d+$/);
    assert.equal(env.documentMeta.signingOrder, 'SEQUENTIAL');
    assert.deepEqual(
      env.recipients.map((r) => [r.email, r.role, r.signingOrder, r.readStatus, r.signingStatus, r.sendStatus]),
      [
        ['ann@example.test', 'SIGNER', 1, 'NOT_OPENED', 'NOT_SIGNED', 'NOT_SENT'],
        ['bob@example.test', 'APPROVER', 2, 'NOT_OPENED', 'NOT_SIGNED', 'NOT_SENT'],
        ['cat@example.test', 'CC', null, 'NOT_OPENED', 'NOT_SIGNED', 'NOT_SENT'],
      ],
    );
    const [ann, bob] = env.recipients;
    assert.equal(env.envelopeItems.length, 1);
    assert.equal(env.envelopeItems[0].title, 'contract.pdf');
    assert.deepEqual(
      env.fields.map((f) => [f.type, f.recipientId, f.envelopeItemId, f.page, f.positionX, f.positionY, f.width, f.height, f.inserted]),
      [['SIGNATURE', ann.id, env.envelopeItems[0].id, 1, 10, 80, 25, 5, false]],
    );

    const created = await sdk.envelopes.fields.createMany({
      envelopeId,
      data: [
        { type: 'TEXT', recipientId: bob.id, page: 2, positionX: 50, positionY: 10, width: 20, height: 4, fieldMeta: { type: 'text', label: 'Note', required: false } },
        { type: 'DATE', recipientId: ann.id, envelopeItemId: env.envelopeItems[0].id, page: 1, positionX: 40, positionY: 80, width: 15, height: 4 },
      ],
    });
    assert.equal(created.data.length, 2);
    assert.equal(typeof created.data[0].id, 'number');
    assert.deepEqual((await sdk.envelopes.fields.delete({ fieldId: created.data[0].id })).success, true);
    assert.equal((await sdk.envelopes.get({ envelopeId })).fields.length, 2);

    const updated = await sdk.envelopes.update({ envelopeId, data: { title: 'Contract v2' }, meta: { subject: 'Please sign v2' } });
    assert.equal(updated.title, 'Contract v2');

    const sent = await sdk.envelopes.distribute({ envelopeId, meta: { message: 'Sent by Signet' } });
    assert.equal(sent.success, true);
    assert.equal(sent.id, envelopeId);
    for (const r of sent.recipients) assert.equal(r.signingUrl, `${standin.origin}/sign/${r.token}`);
    env = await sdk.envelopes.get({ envelopeId });
    assert.equal(env.status, 'PENDING');
    assert.equal(env.documentMeta.subject, 'Please sign v2');
    assert.equal(env.documentMeta.message, 'Sent by Signet');
    // Sequential: only the first to act is invited; CC never is.
    assert.deepEqual(env.recipients.map((r) => r.sendStatus), ['SENT', 'NOT_SENT', 'NOT_SENT']);

    const reminded = await sdk.envelopes.redistribute({ envelopeId, recipients: [ann.id] });
    assert.equal(reminded.recipients.length, 3);

    const original = await download(env.envelopeItems[0].id, 'original');
    assert.equal(original.headers.get('content-type'), 'application/pdf');
    assert.deepEqual(new Uint8Array(await original.arrayBuffer()), pdf);

    assert.equal((await sdk.envelope.envelopeCancel({ envelopeId, reason: 'changed' })).success, true);
    env = await sdk.envelopes.get({ envelopeId });
    assert.equal(env.status, 'CANCELLED');
    assert.ok(env.completedAt, 'Documenso sets completedAt on a cancel');

    assert.equal((await sdk.envelopes.delete({ envelopeId })).success, true);
    // An ended envelope is soft-deleted: still readable, deletedAt set.
    assert.ok((await sdk.envelopes.get({ envelopeId })).deletedAt);

    assert.deepEqual(standin.schemaErrors, []);
    assert.ok(standin.requests.every((r) => r.authorization === standin.apiKey), 'the SDK sends the key raw in Authorization');
  });

  test('the SDK refuses a drifted reply, and cannot read a PDF download (hence plain fetch)', async () => {
    const envelopeId = await draft();
    standin.failNext(1, 'drift', { route: 'envelope.get' });
    await assert.rejects(sdk.envelopes.get({ envelopeId }), ResponseValidationError);
    const itemId = (await sdk.envelopes.get({ envelopeId })).envelopeItems[0].id;
    await assert.rejects(sdk.envelopes.items.download({ envelopeItemId: itemId, version: 'original' }));

    // State the SDK's schema does not allow (SENT is not one of Documenso's statuses) never leaves the stand-in.
    const stored = standin.envelopes.get(envelopeId)!;
    (stored.envelope as { status: string }).status = 'SENT';
    await assert.rejects(sdk.envelopes.get({ envelopeId }), (e: { statusCode?: number; body?: string }) => e.statusCode === 500 && /STANDIN_SCHEMA/.test(e.body ?? ''));
    assert.equal(standin.schemaErrors.length, 1);
    standin.schemaErrors.length = 0;
    stored.envelope.status = 'DRAFT';
  });

  test('refusals answer as Documenso does', async () => {
    const envelopeId = await draft();
    const env = await sdk.envelopes.get({ envelopeId });
    const [ann, , cat] = env.recipients;
    const status = (p: Promise<unknown>) => p.then(() => 200, (e: { statusCode?: number }) => e.statusCode);

    assert.equal(await status(sdk.envelopes.get({ envelopeId: 'envelope_nope' })), 404);
    assert.equal(await status(new Documenso({ serverURL: standin.url, apiKey: 'api_wrong' }).envelopes.get({ envelopeId })), 401);
    assert.equal(await status(sdk.envelope.envelopeCancel({ envelopeId })), 400, 'only PENDING can be cancelled');
    assert.equal(await status(sdk.envelopes.redistribute({ envelopeId, recipients: [ann.id] })), 500, 'Documenso throws a plain Error on a draft');
    assert.equal(await status(sdk.envelopes.fields.createMany({ envelopeId, data: [{ type: 'TEXT', recipientId: cat.id, page: 1, positionX: 1, positionY: 1, width: 5, height: 5 }] })), 400, 'a CC has no fields');
    assert.equal(await status(sdk.envelopes.fields.delete({ fieldId: 999_999 })), 404);
    // A signer without a signature field cannot be sent.
    await sdk.envelopes.fields.delete({ fieldId: env.fields[0].id });
    assert.equal(await status(sdk.envelopes.distribute({ envelopeId })), 400);
    assert.equal((await download('envelope_item_nope', 'signed')).status, 404);
    assert.deepEqual(standin.schemaErrors, []);
  });

  test('signing drives PENDING → COMPLETED with Documenso’s webhooks, and the sealed PDF downloads', async () => {
    const envelopeId = await draft('PARALLEL');
    await sdk.envelopes.distribute({ envelopeId });
    const from = receiver.requests.length;
    await assert.rejects(standin.sign(envelopeId, 'cat@example.test'), /CC/);
    await assert.rejects(standin.sign(envelopeId, 'nobody@example.test'), /no recipient/);

    const opened = await standin.open(envelopeId, 'ann@example.test');
    assert.equal((await standin.open(envelopeId, 'ann@example.test')).length, 0, 'DOCUMENT_OPENED only on the first view');
    await standin.sign(envelopeId, 'ann@example.test');
    let env = await sdk.envelopes.get({ envelopeId });
    assert.equal(env.status, 'PENDING');
    assert.ok(env.recipients[0].signedAt);
    const itemId = env.envelopeItems[0].id;
    assert.deepEqual(new Uint8Array(await (await download(itemId, 'signed')).arrayBuffer()), pdf, 'before sealing, signed serves the original');

    await standin.sign(envelopeId, 'bob@example.test');
    env = await sdk.envelopes.get({ envelopeId });
    assert.equal(env.status, 'COMPLETED');
    assert.ok(env.completedAt);
    const signed = new Uint8Array(await (await download(itemId, 'signed')).arrayBuffer());
    assert.notDeepEqual(signed, pdf);
    assert.equal(Buffer.from(signed.subarray(0, 5)).toString(), '%PDF-');

    const got = hooks(from);
    assert.deepEqual(
      got.map((h) => h.event),
      ['DOCUMENT_OPENED', 'DOCUMENT_RECIPIENT_COMPLETED', 'DOCUMENT_SIGNED', 'DOCUMENT_RECIPIENT_COMPLETED', 'DOCUMENT_SIGNED', 'DOCUMENT_COMPLETED'],
    );
    assert.equal(opened[0].status, 200);
    assert.ok(receiver.requests.slice(from).every((r) => r.headers['x-documenso-secret'] === SECRET));
    const last = got.at(-1)!;
    assert.equal(last.payload.envelopeId, envelopeId);
    assert.equal(`document_${last.payload.id}`, env.secondaryId, 'payload.id is the legacy numeric document id');
    assert.equal(last.payload.status, 'COMPLETED');
    assert.deepEqual(last.payload.recipients.map((r) => r.signingStatus), ['SIGNED', 'SIGNED', 'NOT_SIGNED']);
    assert.deepEqual(last.payload.Recipient, last.payload.recipients);
    assert.equal(last.webhookEndpoint, receiver.url('/engine/documenso/webhook'));

    const again = await standin.redeliver(standin.deliveries.length - 1);
    assert.equal(again.body, standin.deliveries.at(-2)!.body, 'a redelivery posts the same body');
  });

  test('a sequential envelope refuses out of turn; rejection and expiry as Documenso', async () => {
    const envelopeId = await draft('SEQUENTIAL');
    await sdk.envelopes.distribute({ envelopeId });
    await assert.rejects(standin.sign(envelopeId, 'bob@example.test'), /out of turn/);
    await standin.sign(envelopeId, 'ann@example.test');
    assert.deepEqual((await sdk.envelopes.get({ envelopeId })).recipients.map((r) => r.sendStatus), ['SENT', 'SENT', 'NOT_SENT'], 'the next in order is invited');

    const from = receiver.requests.length;
    await standin.expire(envelopeId, 'bob@example.test');
    let env = await sdk.envelopes.get({ envelopeId });
    assert.equal(env.status, 'PENDING', 'an expired recipient leaves the envelope PENDING');
    assert.ok(env.recipients[1].expiresAt);

    await standin.reject(envelopeId, 'bob@example.test', 'Wrong amount');
    env = await sdk.envelopes.get({ envelopeId });
    assert.equal(env.status, 'REJECTED');
    assert.ok(env.completedAt, 'a rejection sets completedAt');
    assert.equal(env.recipients[1].signingStatus, 'REJECTED');
    assert.equal(env.recipients[1].rejectionReason, 'Wrong amount');
    assert.deepEqual(hooks(from).map((h) => h.event), ['RECIPIENT_EXPIRED', 'DOCUMENT_REJECTED']);
    assert.equal(hooks(from)[1].payload.recipients[1].rejectionReason, 'Wrong amount');

    // A draft or pending envelope is hard-deleted (and DOCUMENT_CANCELLED is sent for it).
    const other = await draft();
    const before = receiver.requests.length;
    await sdk.envelopes.delete({ envelopeId: other });
    await assert.rejects(sdk.envelopes.get({ envelopeId: other }), (e: { statusCode?: number }) => e.statusCode === 404);
    assert.deepEqual(hooks(before).map((h) => h.event), ['DOCUMENT_CANCELLED']);
    assert.deepEqual(standin.schemaErrors, []);
  });
});
