/**
 * What the start-up check of the sealing certificate tells people: /health's `seal`, and the dashboard's
 * notice when PDF readers will not trust the seal (the development seal, or an allowed self-signed one).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateDevP12 } from '../src/providers/certs/signer.js';
import { issue, testCa, writeP12 } from './fixtures/certs.js';
import { signInDashboard } from './fixtures/dashboard.js';
import { createTestApp, type TestApp } from './harness.js';

const NOTICE = 'development seal: not trusted by PDF readers';
let tmp: string;
const apps: TestApp[] = [];
before(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'signet-seal-notice-'));
});
after(async () => {
  for (const a of apps) await a.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** A test app whose certificate was checked as `signet serve` checks it before listening. */
async function started(env: Record<string, string> = {}): Promise<TestApp> {
  const t = await createTestApp({ env });
  apps.push(t);
  await t.container.sealCertificate.check();
  return t;
}

const dashboardHtml = async (t: TestApp, url = '/dashboard') => {
  const browser = await signInDashboard(t);
  const res = await t.app.inject({ url, headers: { cookie: browser.cookie } });
  assert.equal(res.statusCode, 200, res.body);
  return res.body;
};

describe('the development seal', () => {
  test('GET /health names it and says readers do not trust it', async () => {
    const t = await started();
    const res = await t.app.inject({ url: '/health' });
    assert.equal(res.statusCode, 200, res.body);
    const { seal } = res.json();
    assert.deepEqual({ ...seal, notAfter: undefined }, { certificate: 'development', subject: 'CN=Signet development seal, O=Signet', notAfter: undefined, warning: NOTICE });
    assert.ok(new Date(seal.notAfter).getTime() > Date.now() + 9 * 365 * 86_400_000, seal.notAfter);
  });

  test('every signed-in dashboard page carries the notice; the sign-in page does not', async () => {
    const t = await started();
    for (const url of ['/dashboard', '/dashboard/keys', '/dashboard/envelopes']) {
      const html = await dashboardHtml(t, url);
      assert.match(html, new RegExp(`<p class="notice" role="note"><strong>Note:</strong> ${NOTICE}\\. Completed documents are sealed with a self-signed certificate`), url);
    }
    const signIn = await t.app.inject({ url: '/dashboard/sign-in' });
    assert.doesNotMatch(signIn.body, /class="notice"/);
  });
});

describe('a certificate from a CA', () => {
  test('/health: configured, no warning; the dashboard: no notice', async () => {
    const { root, intermediate } = testCa();
    const leaf = issue({ cn: 'Acme document seal', issuer: intermediate });
    const p12 = writeP12(tmp, 'acme.p12', leaf.keys.privateKey, [leaf.cert, intermediate.cert, root.cert], 'pw');
    const t = await started({ SIGNING_CERT_P12_PATH: p12, SIGNING_CERT_PASSPHRASE: 'pw' });
    const { seal } = (await t.app.inject({ url: '/health' })).json();
    assert.deepEqual(Object.keys(seal).sort(), ['certificate', 'notAfter', 'subject']);
    assert.equal(seal.certificate, 'configured');
    assert.equal(seal.subject, 'CN=Acme document seal');
    assert.doesNotMatch(await dashboardHtml(t), /class="notice"/);
  });

  test('an allowed self-signed certificate: /health warns, the dashboard notes it', async () => {
    const own = path.join(tmp, 'own.p12');
    writeFileSync(own, generateDevP12('pw', 'Acme own seal'));
    const t = await started({ SIGNING_CERT_P12_PATH: own, SIGNING_CERT_PASSPHRASE: 'pw', SIGNING_CERT_ALLOW_SELF_SIGNED: 'true' });
    const { seal } = (await t.app.inject({ url: '/health' })).json();
    assert.equal(seal.certificate, 'configured');
    assert.equal(seal.warning, 'self-signed certificate: not trusted by PDF readers');
    assert.match(await dashboardHtml(t), /<strong>Note:<\/strong> self-signed seal: not trusted by PDF readers/);
  });
});

test('the OpenAPI document describes /health\'s seal', async () => {
  const t = await started();
  const doc = (await t.app.inject({ url: '/openapi.json' })).json();
  const ok = doc.paths['/health'].get.responses['200'].content['application/json'].schema;
  assert.deepEqual(ok.properties.seal.properties.certificate.enum, ['development', 'configured']);
});
