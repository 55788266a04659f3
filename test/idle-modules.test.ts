import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { RUN_TS } from './fixtures/run-ts.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * What an idle server has loaded, in a fresh process (this one's other imports would load anything):
 * the packages most servers never use load on first use, not with the server (docs/operating.md:
 * Memory). Counted by a load hook (ES modules leave no trace in require.cache), in this thread only.
 */
test("an idle server, its sealing certificate checked, has not loaded viem, @x402, @libpdf/core, openid-client, marked or Node's fetch (undici); a wallet sign-in loads viem", () => {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = new Set();
    registerHooks({ load(url, ctx, next) { urls.add(url); return next(url, ctx); } });
    const loaded = () => ({
      viem: [...urls].some((u) => u.includes('/node_modules/viem/')),
      x402: [...urls].some((u) => u.includes('/node_modules/@x402/')),
      libpdf: [...urls].some((u) => u.includes('/node_modules/@libpdf/core/')),
      oidc: [...urls].some((u) => u.includes('/node_modules/openid-client/')),
      marked: [...urls].some((u) => u.includes('/node_modules/marked/')),
      // Node's own fetch, loaded by the first Response or by an ES import of node:http.
      undici: process.moduleLoadList.some((m) => m.includes('internal/deps/undici/')),
    });
    const { createTestApp } = await import('./test/harness.ts');
    const t = await createTestApp();
    // What main runs at start: the sealing certificate opened and checked (in a worker thread).
    const seal = await t.container.sealCertificate.check();
    const health = await t.app.inject({ url: '/health' });
    const idle = loaded();
    const wallet = '0x' + 'aB'.repeat(20);
    const challenge = await t.app.inject({ url: '/v1/auth/challenge?wallet=' + wallet });
    const guides = await t.app.inject({ url: '/docs/guides' });
    const after = loaded();
    await t.close();
    console.log(JSON.stringify({ seal: seal.certificate, health: health.statusCode, idle, challenge: challenge.statusCode, guides: guides.statusCode, after }));`;
  const out = execFileSync(process.execPath, [...RUN_TS, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'silent' } });
  const result = JSON.parse(out.trim().split('\n').at(-1)!);
  assert.deepEqual(result.idle, { viem: false, x402: false, libpdf: false, oidc: false, marked: false, undici: false });
  assert.equal(result.seal, 'development');
  assert.equal(result.health, 200);
  // An address in mixed case carries an EIP-55 checksum, checked with viem: this one's is wrong.
  assert.equal(result.challenge, 400);
  assert.equal(result.after.viem, true);
  // The guides are rendered with the first request for one.
  assert.equal(result.guides, 200);
  assert.equal(result.after.marked, true);
});
