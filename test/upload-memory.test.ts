// test-lane: once (opens no database)
/**
 * A large upload does not stay in memory once it is done with: its chunks are freed as it streams to
 * disk, and the sandbox worker frees the file it read for the parse when the job is answered. V8 would
 * otherwise leave both to its next collection, which may be 64 MB of Buffers away (src/lib/gc.ts).
 * Measured in memory, not time: Buffer memory of this thread for the stream, the process's RSS for the
 * worker (a file above 32 MB is always given back to the system when freed).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import Fastify from 'fastify';
import { PDF, PdfName } from '@libpdf/core';
import { registerMultipart } from '../src/http/multipart.js';
import { collectGarbage } from '../src/lib/gc.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';

const MB = 1024 * 1024;
const FILE_BYTES = 40 * MB;
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-upload-memory-'));
  dirs.push(dir);
  return dir;
};
after(async () => {
  await closePdfWorkers();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const rssMb = () => Number(/^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

describe('memory of a large upload', () => {
  test('the body chunks are freed as the upload streams to disk: Buffer memory stays far below the file', async () => {
    const app = Fastify();
    registerMultipart(app, { bodyLimit: FILE_BYTES + MB, maxFileBytes: FILE_BYTES + MB, dataDir: tempDir() });
    // A route reads an upload only when it says it consumes one.
    app.post('/upload', { schema: { consumes: ['multipart/form-data'] } }, async (req) => ({ bytes: (req.body as { files: { size: number }[] }).files[0].size }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const boundary = 'x-memory-test';
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="pdf"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n`);
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      // One chunk sent again and again: the sender makes no garbage of its own.
      const chunk = Buffer.alloc(64 * 1024, 'a');
      collectGarbage('major');
      await sleep(50);
      const before = process.memoryUsage().arrayBuffers;
      let most = before;
      const port = (app.server.address() as AddressInfo).port;
      const answer = await new Promise<string>((resolve, reject) => {
        const req = request({ port, host: '127.0.0.1', path: '/upload', method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + FILE_BYTES + tail.length } });
        req.on('error', reject);
        req.on('response', (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve(text));
        });
        let sent = 0;
        req.write(head);
        const more = () => {
          most = Math.max(most, process.memoryUsage().arrayBuffers);
          while (sent < FILE_BYTES) {
            sent += chunk.length;
            if (!req.write(chunk)) return void req.once('drain', more);
          }
          req.end(tail);
        };
        more();
      });
      assert.deepEqual(JSON.parse(answer), { bytes: FILE_BYTES });
      const grew = (most - before) / MB;
      assert.ok(grew < 16, `Buffer memory grew by ${grew.toFixed(1)} MB while a ${FILE_BYTES / MB} MB upload streamed through`);
    } finally {
      await app.close();
    }
  });

  test('the sandbox worker frees the file it parsed once the job is answered', async () => {
    const dir = tempDir();
    const small = path.join(dir, 'small.pdf');
    const big = path.join(dir, 'big.pdf');
    {
      const pdf = PDF.create();
      pdf.addPage({ size: 'letter' });
      writeFileSync(small, await pdf.save());
      // An unused stream makes the file large without making the parse long.
      pdf.getCatalog().set('Junk', pdf.register(pdf.createStream({ Filter: PdfName.of('Crypt') }, new Uint8Array(FILE_BYTES))));
      writeFileSync(big, await pdf.save({ compressStreams: false }));
    }
    const opts = { timeoutMs: 20_000, maxMemoryMb: 128 };
    // The worker is started and loaded by a small job first, and this thread's own garbage collected.
    await prepareDocument([small], opts);
    collectGarbage('major');
    await sleep(100);
    const before = rssMb();
    const doc = await prepareDocument([big], opts);
    assert.ok('file' in doc);
    assert.equal(doc.info.pageCount, 1);
    assert.ok(doc.size > FILE_BYTES);
    await sleep(300);
    const grew = rssMb() - before;
    assert.ok(grew < 16, `the process kept ${grew.toFixed(1)} MB after a ${(doc.size / MB).toFixed(0)} MB file was parsed`);
  });
});
