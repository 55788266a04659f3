import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FIXTURE_PATH } from './fixtures/billable-route.js';
import { crashChildren, type Child } from './fixtures/crash-children.js';
import { envelopeBody, samplePdf, sigField, signer } from './fixtures/envelopes.js';
import { OPS_TOKEN } from './harness.js';

const children = await crashChildren('crash');
const startChild = children.start;

after(() => children.close());

type Reply = { status: number; headers: Headers; text: string; json: () => any };

async function call(child: Child, method: string, url: string, opts: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Reply> {
  const res = await fetch(child.base + url, {
    method,
    headers: { ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function ledger(child: Child, apiKey: string) {
  const res = await call(child, 'GET', '/v1/account/usage?limit=100', { headers: auth(apiKey) });
  assert.equal(res.status, 200, res.text);
  return res.json() as { total: number; data: { id: string; direction: string; amountMicros: number; envelopeTitle: string | null }[] };
}

async function fixtureAudit(child: Child, customerId: string) {
  const res = await call(child, 'GET', `/ops/audit?customerId=${customerId}&limit=100`, { headers: auth(OPS_TOKEN) });
  assert.equal(res.status, 200, res.text);
  return (res.json().data as { action: string; resourceId: string | null }[]).filter((r) => r.action === 'fixture.create');
}

async function balance(child: Child, apiKey: string): Promise<number> {
  const res = await call(child, 'GET', '/v1/account', { headers: auth(apiKey) });
  assert.equal(res.status, 200, res.text);
  return res.json().balanceMicros;
}

test('SIGKILL in the middle of a billable request leaves neither a debit nor its resource; the retry succeeds once', { timeout: 300_000 }, async () => {
  const first = await startChild({ CRASH_ONCE: '1' });
  const created = await call(first, 'POST', '/ops/customers', {
    headers: auth(OPS_TOKEN),
    body: { email: 'crash@example.com', name: 'Crash Test', creditCents: 100 },
  });
  assert.equal(created.status, 201, created.text);
  const { customerId, apiKey } = created.json() as { customerId: string; apiKey: string };
  assert.equal(await balance(first, apiKey), 1_000_000);

  const request = { headers: { ...auth(apiKey), 'idempotency-key': 'crash-key-1' }, body: { title: 'crash' } };
  const inflight = call(first, 'POST', FIXTURE_PATH, request).then(
    (r) => ({ ok: true as const, r }),
    (err: Error) => ({ ok: false as const, err }),
  );
  // The charge and the audit row are written; the transaction is still open when the process dies.
  await first.waitForLine((l) => l === 'CHARGED');
  first.proc.kill('SIGKILL');
  const gone = await first.exited;
  assert.equal(gone.signal, 'SIGKILL');
  const outcome = await inflight;
  assert.equal(outcome.ok, false, 'the client of the killed process gets no answer');

  const second = await startChild();
  // Nothing of the request committed: no debit, no resource.
  assert.equal(await balance(second, apiKey), 1_000_000);
  const afterCrash = await ledger(second, apiKey);
  assert.equal(afterCrash.total, 1);
  assert.deepEqual(afterCrash.data.map((e) => e.direction), ['credit']);
  assert.deepEqual(await fixtureAudit(second, customerId), []);

  // The reservation did commit (in its own short transaction) and still guards the key's fingerprint.
  const reused = await call(second, 'POST', FIXTURE_PATH, { ...request, body: { title: 'not-crash' } });
  assert.equal(reused.status, 422, reused.text);
  assert.equal(reused.json().code, 'IDEMPOTENCY_KEY_REUSED');

  // The same request again: once the dead holder's lease (500 ms) lapses, it runs and commits once.
  let retry = await call(second, 'POST', FIXTURE_PATH, request);
  for (let i = 0; retry.status === 409 && i < 50; i++) {
    assert.equal(retry.json().code, 'IDEMPOTENCY_KEY_IN_USE');
    await new Promise((r) => setTimeout(r, 100));
    retry = await call(second, 'POST', FIXTURE_PATH, request);
  }
  assert.equal(retry.status, 201, retry.text);
  assert.equal(retry.headers.get('idempotent-replayed'), null);
  const body = retry.json();
  assert.equal(body.title, 'crash');
  assert.equal(body.charged, true);

  assert.equal(await balance(second, apiKey), 900_000);
  const afterRetry = await ledger(second, apiKey);
  const debits = afterRetry.data.filter((e) => e.direction === 'debit');
  assert.equal(debits.length, 1);
  assert.equal(debits[0].id, body.ledgerEntryId);
  assert.equal(debits[0].amountMicros, 100_000);
  assert.equal(debits[0].envelopeTitle, 'crash');
  assert.deepEqual((await fixtureAudit(second, customerId)).map((r) => r.resourceId), ['crash']);

  // A further retry is a replay of the stored answer, byte for byte.
  const replay = await call(second, 'POST', FIXTURE_PATH, request);
  assert.equal(replay.status, 201);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.equal(replay.text, retry.text);
  assert.equal((await ledger(second, apiKey)).data.filter((e) => e.direction === 'debit').length, 1);
  assert.equal(await balance(second, apiKey), 900_000);

  second.proc.kill('SIGTERM');
  assert.deepEqual(await second.exited, { code: 0, signal: null });
});

test('SIGKILL between the original PDF write and the commit of POST /v1/envelopes: no envelope, no debit; the retry creates it once', { timeout: 300_000 }, async () => {
  const first = await startChild({ CRASH_AFTER_ORIGINAL: '1' });
  const created = await call(first, 'POST', '/ops/customers', { headers: auth(OPS_TOKEN), body: { email: 'crash-envelope@example.com', name: 'Crash Envelope', creditCents: 100 } });
  assert.equal(created.status, 201, created.text);
  const { apiKey } = created.json() as { apiKey: string };
  const upload = envelopeBody([await samplePdf()], { title: 'crash-envelope', recipients: [signer(1)], fields: [sigField(signer(1).email)] });
  const create = (child: Child) =>
    fetch(`${child.base}/v1/envelopes`, { method: 'POST', headers: { ...auth(apiKey), 'idempotency-key': 'crash-envelope-1', 'content-type': upload.contentType }, body: new Uint8Array(upload.body) }).then(async (r) => ({
      status: r.status,
      replayed: r.headers.get('idempotent-replayed'),
      text: await r.text(),
    }));
  const inflight = create(first).then(
    () => 'answered',
    () => 'no answer',
  );
  await first.waitForLine((l) => l === 'STORED');
  first.proc.kill('SIGKILL');
  assert.equal((await first.exited).signal, 'SIGKILL');
  assert.equal(await inflight, 'no answer');

  const second = await startChild();
  const listed = async () => (await call(second, 'GET', '/v1/envelopes', { headers: auth(apiKey) })).json() as { total: number; data: { envelopeId: string }[] };
  assert.equal((await listed()).total, 0, 'the envelope did not commit');
  assert.equal(await balance(second, apiKey), 1_000_000, 'nor did its charge');

  let retry = await create(second);
  for (let i = 0; retry.status === 409 && i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    retry = await create(second);
  }
  assert.equal(retry.status, 201, retry.text);
  assert.equal(retry.replayed, null);
  const replay = await create(second);
  assert.equal(replay.replayed, 'true');
  assert.equal(replay.text, retry.text);
  const after = await listed();
  assert.equal(after.total, 1);
  assert.equal(after.data[0].envelopeId, JSON.parse(retry.text).envelopeId);
  assert.equal(await balance(second, apiKey), 900_000, 'charged exactly once');

  second.proc.kill('SIGTERM');
  assert.deepEqual(await second.exited, { code: 0, signal: null });
});
