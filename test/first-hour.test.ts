/**
 * Issue 35's way in, through the real app: GET / (page and JSON), /docs and the guides; and the hints
 * where people get stuck: a local webhook URL names WEBHOOK_ALLOW_HOSTS, `file` is accepted for the
 * PDF part, "Check your email" says where the outbox is without SMTP, the banner names the pages, and
 * `npm start` says it is building.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { multipart, postMultipart, samplePdf, sigField, signer } from './fixtures/envelopes.js';
import { loadGuides } from '../src/web/docs/guides.js';
import { RUN_TS } from './fixtures/run-ts.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

describe('GET / and /docs', () => {
  test('GET / is a page linking the dashboard, docs, verify-document and health', async () => {
    const res = await t.app.inject({ url: '/', headers: { accept: 'text/html' } });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /text\/html/);
    for (const href of ['dashboard', 'docs', 'docs/guides', 'verify-document', 'health']) assert.match(res.body, new RegExp(`href="${href}"`));
    assert.match(String(res.headers['content-security-policy']), /script-src 'self'/);
  });

  test('GET / with Accept: application/json answers name, version and links', async () => {
    const res = await t.app.inject({ url: '/', headers: { accept: 'application/json' } });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.name, 'Signet');
    assert.equal(body.version, t.container.version);
    assert.equal(body.links.docs, `${t.config.publicUrl.replace(/\/$/, '')}/docs`);
    for (const k of ['dashboard', 'guides', 'verify-document', 'health', 'openapi']) assert.ok(body.links[k], k);
  });

  test('/docs is the reference page under a strict CSP, its files cached for good', async () => {
    const res = await t.app.inject({ url: '/docs' });
    assert.equal(res.statusCode, 200);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-eval|unsafe-inline/);
    const bundle = /src="(docs\/reference\/app-[0-9a-f]{12}\/swagger-ui-bundle\.js)"/.exec(res.body)?.[1];
    assert.ok(bundle, res.body);
    const js = await t.app.inject({ url: `/${bundle}` });
    assert.equal(js.statusCode, 200);
    assert.match(String(js.headers['cache-control']), /immutable/);
    assert.equal((await t.app.inject({ url: '/docs/reference/app-000000000000/swagger-ui-bundle.js' })).statusCode, 404);
  });

  test('guides: every docs/*.md by name, nothing by path', async () => {
    const index = await t.app.inject({ url: '/docs/guides' });
    assert.equal(index.statusCode, 200);
    assert.match(index.body, /href="guides\/architecture"/);
    const guide = await t.app.inject({ url: '/docs/guides/architecture' });
    assert.equal(guide.statusCode, 200);
    assert.match(guide.body, /<article class="markdown">/);
    for (const url of ['/docs/guides/..%2Fpackage.json', '/docs/guides/%2E%2E', '/docs/guides/nope', '/docs/guides/files/..%2F..%2Fpackage.json']) {
      assert.equal((await t.app.inject({ url })).statusCode, 404, url);
    }
  });

  test('the markdown renderer escapes HTML, rewrites .md links and serves images from docs/', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'signet-guides-'));
    try {
      mkdirSync(path.join(dir, 'images'));
      writeFileSync(path.join(dir, 'images', 'axes.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
      writeFileSync(path.join(dir, 'a-guide.md'), '# A guide\n\n<script>alert(1)</script>\n\nSee [webhooks](webhooks.md#verify), [x](javascript:alert(1)).\n\n![axes](images/axes.svg)\n');
      writeFileSync(path.join(dir, 'webhooks.md'), '# Webhooks\n');
      const guides = loadGuides(dir);
      assert.deepEqual(guides.list.map((g) => g.name), ['a-guide', 'webhooks']);
      const html = guides.get('a-guide')!.html;
      assert.doesNotMatch(html, /<script>/);
      assert.match(html, /&lt;script&gt;/);
      assert.match(html, /href="webhooks#verify"/);
      assert.doesNotMatch(html, /javascript:/);
      assert.match(html, /src="files\/images\/axes.svg"/);
      assert.equal(guides.file('images/axes.svg')?.type, 'image/svg+xml');
      assert.equal(guides.file('../a-guide.md'), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('hints where people get stuck', () => {
  test('a local webhook URL is refused naming WEBHOOK_ALLOW_HOSTS', async () => {
    for (const url of ['http://localhost:4000/hook', 'http://127.0.0.1:4000/hook']) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ url, events: ['*'] }) });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'INVALID_WEBHOOK_URL');
      assert.match(res.json().error, /WEBHOOK_ALLOW_HOSTS=(localhost|127\.0\.0\.1)/);
    }
  });

  test('POST /v1/envelopes accepts the PDF as a `file` part', async () => {
    const mp = multipart([
      { name: 'file', value: await samplePdf(), filename: 'nda.pdf' },
      { name: 'payload', value: JSON.stringify({ title: 'NDA', recipients: [signer(1)], fields: [sigField(signer(1).email)] }) },
    ]);
    const res = await postMultipart(t, mp, { apiKey: t.customer.testApiKey });
    assert.ok(res.statusCode === 200 || res.statusCode === 201 || res.statusCode === 202, res.body);
    assert.ok(res.json().envelopeId);
  });

  test('"Check your email" without SMTP names the outbox directory', async () => {
    const cookies = new Map<string, string>();
    const keep = (res: { cookies: { name: string; value: string }[] }) => res.cookies.forEach((c) => cookies.set(c.name, c.value));
    const cookie = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const form = await t.app.inject({ url: '/dashboard/sign-in' });
    keep(form);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? '';
    const res = await t.app.inject({
      method: 'POST',
      url: '/dashboard/sign-in/email',
      headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrf, email: 'newcomer@example.com' }).toString(),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /Check your email/);
    const hint = /data-testid="outbox-hint">([\s\S]*?)<\/p>/.exec(res.body)?.[1] ?? '';
    assert.ok(hint.includes(path.resolve(t.config.dataDir, 'outbox')), hint);
    assert.match(hint, /SMTP_URL/);
  });

  test('the start-up banner names the dashboard, docs and verify-document URLs', { timeout: 90_000 }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-banner-'));
    const child = spawn(process.execPath, [...RUN_TS, 'src/cli.ts', 'serve'], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', PUBLIC_URL: 'http://signet.test:8080', DATABASE_URL: '', WORKER_ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    try {
      await new Promise<void>((resolve, reject) => {
        setTimeout(() => reject(new Error(`no banner within 60 s: ${out}`)), 60_000).unref();
        child.stdout.on('data', (d) => {
          out += d;
          if (/Verify a document:/.test(out)) resolve();
        });
        child.stderr.on('data', (d) => (out += d));
        child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
      });
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    }
    assert.match(out, /Dashboard: http:\/\/signet\.test:8080\/dashboard/);
    assert.match(out, /API reference: http:\/\/signet\.test:8080\/docs/);
    assert.match(out, /Verify a document: http:\/\/signet\.test:8080\/verify-document/);
  });

  test('npm start says it is building, and how long it took', async () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    assert.match(pkg.scripts.start, /build-progress\.mjs before && npm run build --silent && node scripts\/build-progress\.mjs after/);
    const dist = mkdtempSync(path.join(tmpdir(), 'signet-dist-'));
    try {
      const env = { ...process.env, SIGNET_DIST_DIR: dist };
      const first = await run(process.execPath, ['scripts/build-progress.mjs', 'before'], { cwd: ROOT, env });
      assert.match(first.stdout, /Building Signet \(first run: about a minute\)/);
      assert.match((await run(process.execPath, ['scripts/build-progress.mjs', 'after'], { cwd: ROOT, env })).stdout, /Built in \d+\.\d s/);
      writeFileSync(path.join(dist, '.built'), '');
      assert.match((await run(process.execPath, ['scripts/build-progress.mjs', 'before'], { cwd: ROOT, env })).stdout, /^Building Signet…/);
    } finally {
      rmSync(dist, { recursive: true, force: true });
    }
  });
});
