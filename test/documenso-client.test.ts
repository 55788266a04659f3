// test-lane: once (opens no database)
/**
 * The documenso engine's transport (src/engine/documenso/client.ts) against the Documenso stand-in:
 * each failure mapped to its AppError code, retries on idempotent calls only, the circuit breaker,
 * and the API key kept out of every error and log line.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createDocumensoClient, DocumensoCallError, type DocumensoClientOptions, type FailureKind } from '../src/engine/documenso/client.js';
import type { ErrorCode } from '../src/errors.js';
import { type DocumensoStandin, startDocumensoStandin } from './fixtures/documenso-standin.js';
import { plainPdf } from './fixtures/pdfs.js';

const API_KEY = 'api_standin_k3y_that_must_never_leak';
let standin: DocumensoStandin;
let pdf: Uint8Array;
const logs: string[] = [];
const errors: unknown[] = [];

before(async () => {
  standin = await startDocumensoStandin({ apiKey: API_KEY });
  pdf = await plainPdf(1);
});
after(() => standin.close());

function client(extra: Partial<DocumensoClientOptions> = {}) {
  return createDocumensoClient({
    url: standin.url,
    apiKey: API_KEY,
    timeoutMs: 1500, // roomy: a loaded CI machine took over 300 ms for a multipart create
    retries: 2,
    backoffMs: 5,
    log: { warn: (obj, msg) => void logs.push(JSON.stringify({ ...obj, msg })) },
    ...extra,
  });
}

/** The call fails with `code` (and `kind` upstream); the error is kept for the leak check. */
async function fails(p: Promise<unknown>, code: ErrorCode, kind?: FailureKind): Promise<DocumensoCallError> {
  const err = await p.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  );
  errors.push(err);
  assert.ok(err instanceof DocumensoCallError, `not a DocumensoCallError: ${err}`);
  assert.equal(err.code, code, err.message);
  if (kind) assert.equal(err.upstream.kind, kind, err.message);
  return err;
}

type Client = ReturnType<typeof client>;
async function draft(c: Client, signer = true) {
  const { id } = await c.createEnvelope({
    payload: {
      title: 'Contract',
      type: 'DOCUMENT',
      recipients: [
        { email: 'ann@example.test', name: 'Ann', role: 'SIGNER', fields: signer ? [{ type: 'SIGNATURE', page: 1, positionX: 10, positionY: 80, width: 25, height: 5 }] : [] },
        { email: 'cat@example.test', name: 'Cat', role: 'CC' },
      ],
    },
    files: [{ fileName: 'contract.pdf', content: pdf }],
  });
  const env = (await c.getEnvelope(id))!;
  return { id, env, ann: env.recipients[0], cat: env.recipients[1], itemId: env.envelopeItems[0].id };
}

/** Calls made to a route while `fn` runs. */
async function callsTo(route: keyof DocumensoStandin['calls'], fn: () => Promise<unknown>): Promise<number> {
  const before = standin.calls[route];
  await fn();
  return standin.calls[route] - before;
}

describe('documenso client', () => {
  test('every call goes through when Documenso answers', async () => {
    const c = client();
    const { id, ann, itemId } = await draft(c);
    const [field] = await c.createFields({ envelopeId: id, data: [{ type: 'DATE', recipientId: ann.id, page: 1, positionX: 40, positionY: 80, width: 15, height: 4 }] });
    assert.equal(await c.deleteField(field.id), true);
    assert.equal(await c.deleteField(field.id), false, 'a field that does not exist');
    assert.equal((await c.updateEnvelope({ envelopeId: id, data: { title: 'Renamed' } })).title, 'Renamed');
    const sent = await c.distribute({ envelopeId: id });
    assert.ok(sent.recipients.every((r) => r.signingUrl.startsWith(`${standin.origin}/sign/`)));
    await c.redistribute({ envelopeId: id, recipients: [ann.id] });
    assert.deepEqual(await c.download(itemId, 'original'), pdf);
    await c.cancel(id, 'no longer needed');
    assert.equal((await c.getEnvelope(id))!.status, 'CANCELLED');
    assert.equal(await c.deleteEnvelope(id), true);

    const other = await draft(c);
    assert.equal(await c.deleteEnvelope(other.id), true);
    assert.equal(await c.deleteEnvelope(other.id), false, 'hard-deleted already');
    assert.equal(await c.getEnvelope(other.id), null);
    assert.equal(c.circuit, 'closed');
  });

  test('unreachable, timed out, 5xx or a dropped socket: DOCUMENSO_UNAVAILABLE', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const nowhere = client({ url: `http://127.0.0.1:${port}/api/v2`, retries: 0 });
    await fails(nowhere.getEnvelope('envelope_x'), 'DOCUMENSO_UNAVAILABLE', 'unreachable');
    await fails(nowhere.download('item', 'signed'), 'DOCUMENSO_UNAVAILABLE', 'unreachable');

    const c = client();
    standin.failNext(1, 'hang', { route: 'envelope.create' });
    const started = Date.now();
    const timedOut = await fails(draft(c), 'DOCUMENSO_UNAVAILABLE', 'timeout');
    assert.ok(Date.now() - started < 6000, 'the timeout bounds the call');
    assert.equal(timedOut.status, 503);

    standin.failNext(1, 'error', { route: 'envelope.create', status: 502 });
    assert.equal((await fails(draft(c), 'DOCUMENSO_UNAVAILABLE', 'server')).upstream.status, 502);

    const { id } = await draft(c);
    standin.failNext(1, 'close', { route: 'envelope.distribute' });
    await fails(c.distribute({ envelopeId: id }), 'DOCUMENSO_UNAVAILABLE', 'unreachable');
    standin.failNext(1, 'error', { route: 'envelope.distribute', status: 503 });
    await fails(c.distribute({ envelopeId: id }), 'DOCUMENSO_UNAVAILABLE', 'server');
  });

  test('refusals and unexpected answers map to their codes', async () => {
    const c = client();
    const { id, ann, cat, itemId, env } = await draft(c);

    const field = await fails(c.createFields({ envelopeId: id, data: [{ type: 'TEXT', recipientId: cat.id, page: 1, positionX: 1, positionY: 1, width: 5, height: 5 }] }), 'FIELD_CREATION_FAILED', 'refused');
    assert.equal(field.status, 502);
    assert.match(field.message, /Recipient type cannot have fields/);
    await fails(c.createFields({ envelopeId: 'envelope_nope', data: [{ type: 'TEXT', recipientId: ann.id, page: 1, positionX: 1, positionY: 1, width: 5, height: 5 }] }), 'FIELD_CREATION_FAILED', 'not_found');
    await fails(c.cancel(id), 'INVALID_STATE', 'refused');
    await fails(c.updateEnvelope({ envelopeId: 'envelope_nope', data: { title: 'x' } }), 'UPDATE_FAILED', 'not_found');
    await fails(c.download('envelope_item_nope', 'signed'), 'DOWNLOAD_FAILED', 'not_found');
    standin.failNext(1, 'drift', { route: 'item.download' });
    await fails(c.download(itemId, 'signed'), 'DOWNLOAD_FAILED', 'unexpected');
    standin.failNext(1, 'drift', { route: 'envelope.get' });
    await fails(c.getEnvelope(id), 'DOCUMENSO_UNAVAILABLE', 'unexpected');
    // A PDF larger than any Signet would accept is refused, not read whole into memory.
    const small = client({ maxDownloadBytes: pdf.byteLength - 1 });
    await fails(small.download(itemId, 'original'), 'DOWNLOAD_FAILED', 'unexpected');
    assert.deepEqual(await client({ maxDownloadBytes: pdf.byteLength }).download(itemId, 'original'), pdf);

    // A 4xx on create is Documenso refusing this request, not an outage: the engine's refusal, not retryable.
    standin.failNext(1, 'error', { route: 'envelope.create', status: 400 });
    const create = await fails(draft(c), 'SEND_FAILED', 'refused');
    assert.equal(create.status, 502);
    assert.equal(create.extras.retryable, false);

    const unsigned = await draft(c, false);
    await fails(c.distribute({ envelopeId: unsigned.id }), 'SEND_FAILED', 'refused');
    // Documenso answers a reminder on a draft with a plain 500: unavailable, not a refusal.
    await fails(c.redistribute({ envelopeId: id, recipients: [ann.id] }), 'DOCUMENSO_UNAVAILABLE', 'server');

    await c.distribute({ envelopeId: id });
    await standin.sign(id, 'ann@example.test');
    await fails(c.deleteField(env.fields[0].id), 'DELETE_FAILED', 'refused');

    const wrongKey = client({ apiKey: 'api_wrong' });
    await fails(wrongKey.getEnvelope(id), 'DOCUMENSO_UNAVAILABLE', 'unauthorized');
    await fails(wrongKey.download(itemId, 'signed'), 'DOCUMENSO_UNAVAILABLE', 'unauthorized');
  });

  test('idempotent calls are retried with backoff; create, fields, send, cancel and update never', async () => {
    const c = client();
    const { id, ann, itemId } = await draft(c);
    const retriesBefore = logs.filter((l) => l.includes('retrying')).length;

    standin.failNext(2, 'error', { route: 'envelope.get' });
    assert.equal(await callsTo('envelope.get', async () => assert.equal((await c.getEnvelope(id))!.id, id)), 3);
    standin.failNext(3, 'error', { route: 'envelope.get' });
    let err: DocumensoCallError | undefined;
    assert.equal(await callsTo('envelope.get', async () => void (err = await fails(c.getEnvelope(id), 'DOCUMENSO_UNAVAILABLE', 'server'))), 3);
    assert.equal(err?.upstream.attempts, 3, 'bounded: 1 + retries');
    standin.failNext(1, 'close', { route: 'item.download' });
    assert.equal(await callsTo('item.download', async () => assert.deepEqual(await c.download(itemId, 'original'), pdf)), 2);
    const [extra] = await c.createFields({ envelopeId: id, data: [{ type: 'NAME', recipientId: ann.id, page: 1, positionX: 1, positionY: 1, width: 5, height: 5 }] });
    standin.failNext(1, 'hang', { route: 'field.delete' });
    assert.equal(await callsTo('field.delete', async () => assert.equal(await c.deleteField(extra.id), true)), 2);
    assert.equal(logs.filter((l) => l.includes('retrying')).length - retriesBefore, 2 + 2 + 1 + 1);

    const once = async (route: keyof DocumensoStandin['calls'], p: () => Promise<unknown>) => {
      standin.failNext(1, 'error', { route });
      assert.equal(await callsTo(route, () => fails(p(), 'DOCUMENSO_UNAVAILABLE', 'server')), 1, `${route} is not retried`);
    };
    await once('envelope.create', () => draft(c));
    await once('field.createMany', () => c.createFields({ envelopeId: id, data: [{ type: 'SIGNATURE', recipientId: ann.id, page: 1, positionX: 1, positionY: 1, width: 5, height: 5 }] }));
    await once('envelope.update', () => c.updateEnvelope({ envelopeId: id, data: { title: 'x' } }));
    await once('envelope.distribute', () => c.distribute({ envelopeId: id }));
    await c.distribute({ envelopeId: id });
    await once('envelope.redistribute', () => c.redistribute({ envelopeId: id, recipients: [ann.id] }));
    await once('envelope.cancel', () => c.cancel(id));
  });

  test('the circuit opens after K failures, fails fast through the cool-down, and one probe closes it', async () => {
    let clock = 0;
    const c = client({ retries: 0, timeoutMs: 200, breaker: { failures: 3, coolDownMs: 10_000 }, now: () => clock });
    const { id } = await draft(c);

    standin.failNext(3, 'error', { route: 'envelope.get' });
    for (let i = 0; i < 3; i++) await fails(c.getEnvelope(id), 'DOCUMENSO_UNAVAILABLE', 'server');
    assert.equal(c.circuit, 'open');
    // Open: nothing reaches Documenso, a create included (so nothing is half-created).
    assert.equal(await callsTo('envelope.get', () => fails(c.getEnvelope(id), 'DOCUMENSO_UNAVAILABLE', 'open')), 0);
    assert.equal(await callsTo('envelope.create', () => fails(draft(c), 'DOCUMENSO_UNAVAILABLE', 'open')), 0);
    assert.match(errors.at(-1) instanceof Error ? (errors.at(-1) as Error).message : '', /paused for 10 s/);

    // Half-open: one probe; its failure re-opens for another cool-down.
    clock += 10_000;
    assert.equal(c.circuit, 'half-open');
    standin.failNext(1, 'hang', { route: 'envelope.get' });
    const probe = fails(c.getEnvelope(id), 'DOCUMENSO_UNAVAILABLE', 'timeout');
    await fails(c.getEnvelope(id), 'DOCUMENSO_UNAVAILABLE', 'open'); // while the probe is out
    await probe;
    assert.equal(c.circuit, 'open');

    // A probe that Documenso answers, even with a refusal (404), closes it.
    clock += 10_000;
    assert.equal(await c.getEnvelope('envelope_nope'), null);
    assert.equal(c.circuit, 'closed');
    assert.equal((await c.getEnvelope(id))!.id, id);
    assert.ok(logs.some((l) => l.includes('circuit open')) && logs.some((l) => l.includes('circuit closed')));

    // Refusals do not count toward K.
    for (let i = 0; i < 4; i++) await fails(c.cancel(id), 'INVALID_STATE', 'refused');
    assert.equal(c.circuit, 'closed');
  });

  test('slow downloads open only the downloads\' circuit: every other call goes on', async () => {
    const c = client({ retries: 0, timeoutMs: 2000, downloadTimeoutMs: 150, breaker: { failures: 2, coolDownMs: 30_000 } });
    const { id, itemId } = await draft(c);
    standin.failNext(2, 'hang', { route: 'item.download' });
    for (let i = 0; i < 2; i++) assert.match((await fails(c.download(itemId, 'signed'), 'DOCUMENSO_UNAVAILABLE', 'timeout')).message, /within 150 ms/);
    assert.equal(c.downloadCircuit, 'open');
    assert.equal(await callsTo('item.download', () => fails(c.download(itemId, 'signed'), 'DOCUMENSO_UNAVAILABLE', 'open')), 0);
    // The API calls have their own circuit, still closed.
    assert.equal(c.circuit, 'closed');
    assert.equal((await c.getEnvelope(id))!.id, id);
    await c.distribute({ envelopeId: id });
  });

  test('the API key is in no error and no log line', () => {
    assert.ok(errors.length >= 30, `errors seen: ${errors.length}`);
    for (const e of errors as DocumensoCallError[]) {
      const text = [e.message, e.stack, JSON.stringify(e), JSON.stringify(e.upstream), String(e.cause)].join('\n');
      assert.ok(!text.includes(API_KEY), `leaked in: ${e.message}`);
      assert.equal(e.cause, undefined, 'no cause: the SDK error holds the request and its headers');
    }
    assert.ok(logs.length > 0);
    for (const line of logs) assert.ok(!line.includes(API_KEY) && !/authorization/i.test(line), line);
  });
});
