// test-lane: once (dashboard pages over services whose SQL runs on both stores in their modules' own files)
/**
 * Issue 35.6, the first call from the dashboard: the snippet exactly as a page shows it (entities
 * decoded) runs in bash against the listening app and creates a test envelope from the sample NDA
 * Signet serves; then the dashboard, asked for no mode, shows that envelope as test data (and test
 * webhooks likewise) while the account has nothing live.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { form, signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';

let t: TestApp;
let base: string;
let receiver: Receiver;
let work: string;

/** The snippet's links name PUBLIC_URL, so the port is chosen before the app listens. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

before(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await createTestApp({ env: { PUBLIC_URL: base, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
  await t.app.listen({ host: '127.0.0.1', port });
  receiver = await startReceiver();
  work = mkdtempSync(path.join(tmpdir(), 'signet-first-call-'));
});
after(async () => {
  await receiver?.close();
  await t?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const page = (url: string, b: DashboardBrowser) => t.app.inject({ url, headers: { cookie: b.cookie } });

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&#x27;': "'" };

/** The first-call snippet as a browser shows (and the copy button copies) it. */
function snippetOf(html: string): string {
  const m = /<pre id="first-call"[^>]*><code>([\s\S]*?)<\/code><\/pre>/.exec(html);
  assert.ok(m, 'the page shows the first-call snippet');
  return m[1].replace(/&(?:amp|lt|gt|quot|#39|#x27);/g, (e) => ENTITIES[e]);
}

/**
 * Runs the snippet in bash with only PATH (the node npm brought) and, if given, SIGNET_API_KEY. curl
 * is wrapped to print each answer's status on a line of its own after its body.
 */
async function runSnippet(script: string, apiKey?: string): Promise<{ statuses: string[]; envelope: Record<string, any> }> {
  const dir = mkdtempSync(path.join(work, 'run-'));
  const wrapped = `set -e\ncurl() { command curl -w '\\n%{http_code}\\n' "$@"; }\n${script}\n`;
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
    execFile('bash', ['-c', wrapped], { cwd: dir, env: { PATH: process.env.PATH!, HOME: dir, ...(apiKey && { SIGNET_API_KEY: apiKey }) }, timeout: 60_000 }, (err, out, errOut) =>
      err ? reject(new Error(`${err.message}\n${out}\n${errOut}`)) : resolve({ stdout: out }),
    ),
  );
  const lines = stdout.split('\n').filter(Boolean);
  const statuses = lines.filter((l) => /^\d{3}$/.test(l));
  const json = lines.find((l) => l.startsWith('{'));
  assert.ok(json, `the create answered JSON: ${stdout}`);
  return { statuses, envelope: JSON.parse(json) };
}

function assertSentNda(run: { statuses: string[]; envelope: Record<string, any> }): void {
  assert.deepEqual(run.statuses, ['200', '201'], 'the sample PDF is fetched, then the envelope created');
  const e = run.envelope;
  assert.equal(e.title, 'NDA');
  assert.deepEqual(e.recipients.map((r: { email: string }) => r.email), ['alice@example.com', 'bob@example.com']);
  assert.equal(e.detectedFromPlaceholders, true, 'the markers r1 and r2 became the fields');
  assert.equal(e.fields.length, 2);
}

async function freshAccount(): Promise<{ c: TestCustomer; b: DashboardBrowser }> {
  const c = await t.createCustomer(500);
  return { c, b: await signInDashboard(t, c.id) };
}

describe('the first call', () => {
  test('the overview of an account that never sent shows the snippet, which runs as shown with the test key exported', async () => {
    const { c, b } = await freshAccount();
    const overview = await page('/dashboard', b);
    assert.equal(overview.statusCode, 200);
    const script = snippetOf(overview.body);
    assert.doesNotMatch(script, /uuidgen/);
    assert.doesNotMatch(script, /svc_live_|svc_test_[0-9a-f]/, 'no key of the account in the page, and never a live one');
    assert.match(script, /SIGNET_API_KEY=svc_test_/, 'a line says to export the test key');
    assert.ok(script.includes(`curl -s -o nda.pdf ${base}/samples/nda.pdf`), script);
    assert.match(overview.body, /data-copy="first-call"/);
    assert.match(overview.body, /class="copy-status" role="status" aria-live="polite"/);

    const run = await runSnippet(script, c.testApiKey);
    assertSentNda(run);
    const read = await t.app.inject({ url: `/v1/envelopes/${run.envelope.envelopeId}`, headers: bearer(c.testApiKey) });
    assert.equal(read.statusCode, 200, 'a test envelope');
    assert.equal((await t.app.inject({ url: `/v1/envelopes/${run.envelope.envelopeId}`, headers: bearer(c.apiKey) })).statusCode, 404, 'not a live one');

    // After the first send: the envelope is on the dashboard without asking for test data, said to be test data.
    for (const url of ['/dashboard/envelopes', '/dashboard']) {
      const res = await page(url, b);
      assert.equal(res.statusCode, 200);
      assert.ok(res.body.includes(`href="/dashboard/envelopes/${run.envelope.envelopeId}?mode=test"`), `${url} lists the test envelope`);
      assert.match(res.body, /<strong class="badge test">Test data<\/strong> Showing test envelopes: this account has no live ones yet/, url);
      assert.doesNotMatch(res.body, /No envelopes yet/, url);
      assert.match(res.body, new RegExp(`href="${url}\\?mode=live"`), `${url}: the switch asks for live data by name`);
    }
    assert.doesNotMatch((await page('/dashboard', b)).body, /id="first-call"/, 'the first steps give way once something was sent');
    const live = await page('/dashboard/envelopes?mode=live', b);
    assert.match(live.body, /No envelopes yet/, 'live data asked for by name: none');
    assert.doesNotMatch(live.body, /Test data/);
    const filtered = await page('/dashboard/envelopes?status=COMPLETED', b);
    assert.doesNotMatch(filtered.body, /Showing test envelopes/, 'a filter is a question about live data');
  });

  test('right after minting a test key, the keys page fills it into the snippet, which runs as shown', async () => {
    const { b } = await freshAccount();
    const minted = await t.app.inject({ method: 'POST', url: '/dashboard/keys', ...form(b, { mode: 'test' }) });
    assert.equal(minted.statusCode, 200, minted.body);
    const key = /<code id="new-key" class="secret">(svc_test_[0-9a-f]{32})<\/code>/.exec(minted.body)?.[1] ?? assert.fail('no key shown');
    const script = snippetOf(minted.body);
    assert.ok(script.startsWith(`export SIGNET_API_KEY=${key}\n`), script);
    assertSentNda(await runSnippet(script));

    const live = await t.app.inject({ method: 'POST', url: '/dashboard/keys', ...form(b, { mode: 'live' }) });
    assert.equal(live.statusCode, 200);
    assert.doesNotMatch(live.body, /id="first-call"/, 'never a live key in the snippet');
  });

  test('test webhooks show on the webhooks page while the account has no live ones', async () => {
    const { c, b } = await freshAccount();
    const made = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(c.testApiKey), 'content-type': 'application/json' }, payload: { url: receiver.url('/hooks'), events: ['envelope.completed'] } });
    assert.equal(made.statusCode, 201, made.body);
    const res = await page('/dashboard/webhooks', b);
    assert.ok(res.body.includes(receiver.url('/hooks')), 'the test endpoint is listed');
    assert.match(res.body, /Showing test webhook endpoints: this account has no live ones yet/);
    const live = await page('/dashboard/webhooks?mode=live', b);
    assert.ok(!live.body.includes(receiver.url('/hooks')));
    assert.match(live.body, /No webhook endpoints/);
  });
});
