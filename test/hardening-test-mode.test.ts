import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { account, createEnvelope, drain, ledgerFor, newKey, person, recipientToken, signAs } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => (t = await createTestApp({ creditCents: 500 })));
after(() => t.close());

/** Runs a poppler tool on the bytes; answers its stdout (and stderr). */
function poppler(tool: string, bytes: Uint8Array, args: string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-testmode-'));
  try {
    const file = path.join(dir, 'sealed.pdf');
    writeFileSync(file, bytes);
    const out = spawnSync(tool, [...args, file, ...(tool === 'pdftotext' ? ['-'] : [])], { encoding: 'utf8' });
    return `${out.stdout}\n${out.stderr}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const pageCount = (bytes: Uint8Array) => Number(/Pages:\s+(\d+)/.exec(poppler('pdfinfo', bytes, []))![1]);

/** Creates, signs and seals one envelope; answers the sealed PDF. */
async function sealed(headers: Record<string, string>, apiKey = t.customer.apiKey): Promise<Uint8Array> {
  const s = person('tm');
  const env = await createEnvelope(t, { title: 'Test mode', recipients: [s] }, { apiKey, headers });
  await drain(t);
  await signAs(t, recipientToken(env, s.email));
  await drain(t);
  const res = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(apiKey) });
  assert.equal(res.statusCode, 200, res.body);
  return res.rawPayload;
}

describe('test-mode envelopes are marked TEST when sealed', () => {
  test('X-Service-Test-Mode on create-and-send: TEST on the certificate page and in the signature reason; a paid one is not', async () => {
    const testPdf = await sealed({ 'x-service-test-mode': 'true' });
    const paidPdf = await sealed({});
    // The certificate is the last page (a one-page certificate for one recipient).
    const certOf = (bytes: Uint8Array) => poppler('pdftotext', bytes, ['-f', String(pageCount(bytes)), '-l', String(pageCount(bytes))]);
    const testCert = certOf(testPdf);
    assert.match(testCert, /Certificate of completion/);
    assert.match(testCert, /TEST - this envelope was sent in test mode/);
    assert.match(testCert, /TEST - Envelope /, 'the footer says TEST on every certificate page');
    const paidCert = certOf(paidPdf);
    assert.match(paidCert, /Certificate of completion/);
    assert.doesNotMatch(paidCert, /TEST/);

    // The marking is drawn (visible), not only text: the rendered page differs where the banner sits.
    const render = (bytes: Uint8Array) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'signet-testmode-'));
      try {
        writeFileSync(path.join(dir, 'p.pdf'), bytes);
        const n = String(pageCount(bytes));
        return execFileSync('pdftoppm', ['-f', n, '-l', n, '-r', '30', '-gray', path.join(dir, 'p.pdf')], { maxBuffer: 1 << 24 });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
    const dark = (pgm: Buffer) => {
      const [, w, h] = /^P5\s+(\d+)\s+(\d+)\s+255\s/.exec(pgm.subarray(0, 40).toString('latin1'))!;
      return [...pgm.subarray(pgm.length - Number(w) * Number(h))].filter((v) => v < 160).length;
    };
    assert.ok(dark(render(testPdf)) > dark(render(paidPdf)), 'the TEST banner is visible on the rendered certificate');

    // pdfsig does not print the reason: read /Reason from the signature dictionary (the last update).
    const reason = (bytes: Uint8Array) => [...Buffer.from(bytes).toString('latin1').matchAll(/\/Reason\s*\(([^)]*)\)/g)].at(-1)?.[1] ?? '';
    assert.match(reason(testPdf), /^TEST/);
    assert.doesNotMatch(reason(paidPdf), /TEST/);
    assert.match(reason(paidPdf), /Signed electronically/);
  });

  test('a test API key seals a TEST document too', async () => {
    const pdf = await sealed({}, t.customer.testApiKey);
    assert.match(poppler('pdftotext', pdf, ['-f', String(pageCount(pdf))]), /TEST - this envelope was sent in test mode/);
  });
});

describe('X-Service-Test-Mode is honoured on create-and-send only', () => {
  test('on a draft create or a draft send it changes nothing: the send is charged and mails for real', async () => {
    const c = await t.createCustomer(500);
    const s = person('tm-draft');
    const draft = await createEnvelope(t, { recipients: [s], draft: true }, { apiKey: c.apiKey, headers: { 'x-service-test-mode': 'true' } });
    const send = await t.app.inject({
      method: 'POST',
      url: `/v1/envelopes/${draft.envelopeId}/send`,
      headers: { ...bearer(c.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json', 'x-service-test-mode': 'true' },
      payload: {},
    });
    assert.equal(send.statusCode, 200, send.body);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490, 'the send is charged');
    assert.equal((await account(t, c.apiKey)).sandboxUsed, 0);
    assert.equal((await ledgerFor(t, draft.envelopeId, 'debit')).length, 1);

    // Create-and-send with the header stays a free test send.
    await createEnvelope(t, { recipients: [person('tm-create')] }, { apiKey: c.apiKey, headers: { 'x-service-test-mode': 'true' } });
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
    assert.equal((await account(t, c.apiKey)).sandboxUsed, 1);
  });
});
