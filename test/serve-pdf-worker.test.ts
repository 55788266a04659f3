// test-lane: once (one `serve()` on its own PGlite directory whatever the suite's store)
/**
 * Issue 38, memory: `signet serve` loads no PDF parsing worker at start (it held 20-40 MiB at idle);
 * the first upload starts one and is answered as any other.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { serve } from '../src/main.js';
import { closePdfWorkers } from '../src/pdf/prepare.js';
import { sandboxStats } from '../src/pdf/sandbox.js';
import { multipart, samplePdf, sigField, signer } from './fixtures/envelopes.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-serve-pdf-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });

const prepareWorkers = () => sandboxStats().find((s) => s.pool === 'prepare')?.workers ?? 0;

test('serve starts no parsing worker; the first upload starts one and is created', async () => {
  const port = await freePort();
  const opsToken = randomBytes(16).toString('hex');
  const config = loadConfig({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', OPS_TOKEN: opsToken, LOG_LEVEL: 'warn', EMBEDDED_DB: 'pglite', WORKER_ENABLED: 'false' });
  const server = await serve(config);
  try {
    assert.equal(prepareWorkers(), 0, 'no parsing worker before the first upload');
    const base = `http://127.0.0.1:${port}`;
    const customer = await fetch(`${base}/ops/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${opsToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'first-upload@example.com', name: 'First', creditCents: 100 }),
    });
    assert.equal(customer.status, 201, await customer.clone().text());
    const { apiKey } = (await customer.json()) as { apiKey: string };
    const mp = multipart([
      { name: 'pdf', value: await samplePdf(), filename: 'first.pdf' },
      { name: 'payload', value: JSON.stringify({ title: 'First', recipients: [signer(1)], fields: [sigField(signer(1).email)] }) },
    ]);
    const res = await fetch(`${base}/v1/envelopes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': randomUUID(), 'content-type': mp.contentType },
      body: new Uint8Array(mp.body),
    });
    assert.equal(res.status, 201, await res.clone().text());
    assert.ok(((await res.json()) as { envelopeId?: string }).envelopeId);
    assert.equal(prepareWorkers(), 1, 'the upload started one worker, parked for the next');
  } finally {
    await server.stop();
    await closePdfWorkers();
  }
});
