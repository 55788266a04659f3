/**
 * Sealing runs off the main thread (a worker with decode bounds; the key stays in the parent), and
 * a late second run of the seal job cannot replace the committed sealed PDF.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import type { P12Signer } from '@libpdf/core';
import { eq } from 'drizzle-orm';
import { engineDocuments } from '../src/db/schema/index.js';
import { AppError } from '../src/errors.js';
import { createLocalEngineRepo } from '../src/engine/local/local-engine.repo.js';
import { createNotifier } from '../src/engine/local/notifications.js';
import { sealJob, type SealFn } from '../src/engine/local/seal-job.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';
import { sealDocument } from '../src/pdf/seal.js';
import { closeSealWorkers, sealInSandbox } from '../src/pdf/seal-sandbox.js';
import type { CertificateData, PreparedDocument, StampField } from '../src/pdf/types.js';
import { loadSigner } from '../src/providers/certs/signer.js';
import type { BlobStorage } from '../src/providers/storage/index.js';
import { createTestApp, type TestApp } from './harness.js';
import { createEnvelope, drain, person, recipientToken, signAs } from './fixtures/envelopes.js';
import * as fx from './fixtures/pdfs.js';

const LIMITS = { timeoutMs: 60_000, maxMemoryMb: 256 };
const tmp = mkdtempSync(path.join(tmpdir(), 'signet-seal-test-'));
let signer: P12Signer;

before(async () => {
  signer = (await loadSigner({ dataDir: path.join(tmp, 'data') })).signer;
});
after(async () => {
  await closeSealWorkers();
  await closePdfWorkers();
  rmSync(tmp, { recursive: true, force: true });
});

function certificate(doc: PreparedDocument): CertificateData {
  return {
    envelopeId: 'env_seal_test',
    title: 'Sealed off the main thread',
    documentSha256: doc.sha256,
    completedAt: '2025-03-01T12:00:00.000Z',
    recipients: [{ name: 'Ana', email: 'ana@example.com', role: 'SIGNER', status: 'SIGNED', ip: null, userAgent: null, viewedAt: null, signedAt: '2025-03-01T11:55:00.000Z' }],
    events: [{ at: '2025-03-01T11:55:00.000Z', event: 'DOCUMENT_SIGNED', recipientEmail: 'ana@example.com', ip: null }],
  };
}

function pdfsigValid(bytes: Uint8Array): void {
  const f = path.join(tmp, `s-${Math.random().toString(36).slice(2)}.pdf`);
  writeFileSync(f, bytes);
  const sig = spawnSync('pdfsig', [f], { encoding: 'utf8' });
  if (sig.error) return; // poppler-utils missing: the signature is checked elsewhere
  assert.match(sig.stdout, /Signature Validation: Signature is Valid\./, sig.stdout);
  assert.match(sig.stdout, /Total document signed/, sig.stdout);
}

/** A 4000×1000 (4 Mpx, the most the door lets in) RGBA signature with a stroke across it. */
function bigSignaturePng(): Uint8Array {
  const { rgba } = fx.signatureImage(4000, 1000);
  return fx.encodePng(4000, 1000, rgba, true);
}

// PDF work alone, no database: the PGlite lane runs it, the PostgreSQL lane need not again.
describe('sealing in a worker thread', { skip: Boolean(process.env.DATABASE_URL) && 'opens no database: runs in the PGlite lane' }, () => {
  test('produces a valid PAdES seal with the images stamped; the main thread stays mostly idle meanwhile', async (t) => {
    const doc = await prepareDocument([await fx.imagePdf(6)], LIMITS);
    const image = bigSignaturePng();
    const fields: StampField[] = Array.from({ length: 6 }, (_, i) => ({ page: i + 1, x: 10, y: 80, width: 40, height: 10, type: 'SIGNATURE' as const, value: null, image }));
    const input = { original: doc.bytes, fields, hide: [], certificate: certificate(doc), signer };

    // Control: in this thread the same seal keeps the event loop busy nearly all the time.
    const inlineStart = performance.eventLoopUtilization();
    await sealDocument(input);
    const inline = performance.eventLoopUtilization(inlineStart).utilization;

    await sealInSandbox(input, LIMITS); // warm the worker (loading @libpdf/core)
    const start = performance.eventLoopUtilization();
    const sealed = await sealInSandbox(input, LIMITS);
    const sandboxed = performance.eventLoopUtilization(start).utilization;

    pdfsigValid(sealed);
    t.diagnostic(`main thread busy: inline ${inline.toFixed(2)}, sandboxed ${sandboxed.toFixed(2)}`);
    assert.ok(inline > 0.8, `control: inline seal utilization ${inline.toFixed(2)}`);
    assert.ok(sandboxed < 0.5, `main thread busy ${Math.round(sandboxed * 100)}% of the seal`);
  });

  test('an oversized or lying signature image is refused in the worker, never decoded', async () => {
    const doc = await prepareDocument([await fx.plainPdf(1)], LIMITS);
    const field = (image: Uint8Array): StampField => ({ page: 1, x: 10, y: 10, width: 40, height: 10, type: 'SIGNATURE', value: null, image });
    const seal = (image: Uint8Array) => sealInSandbox({ original: doc.bytes, fields: [field(image)], hide: [], certificate: certificate(doc), signer }, LIMITS);
    // Stored before the door checked sizes: 16000×16000 would need about 3 GB.
    await assert.rejects(seal(fx.pngDeclaring(16_000, 16_000)), /16000×16000 pixels/);
    // Within bounds on its header, but its data inflates far past what 100×100 needs.
    await assert.rejects(seal(fx.pngDeclaring(100, 100, deflateSync(Buffer.alloc(64 * 1024 * 1024)))), /expands beyond its declared size/);
    // A second IHDR: the header check reads 10×10, a decoder keeping the last would decode 2500×2500 (6.25 Mpx).
    await assert.rejects(seal(fx.pngWithHeaders([[10, 10], [2500, 2500]], deflateSync(Buffer.alloc((2500 * 4 + 1) * 2500)))), /more than one header \(IHDR/);
    // The worker is still good for the next seal.
    pdfsigValid(await seal(fx.signaturePng()));
  });

  test("a signature image's inflated and unfiltered pixels count against the job's decode budget", async () => {
    // 32 MB of heap: 16 MiB per stream, 128 MiB per job. A 4000×1000 RGBA image decodes to about
    // 46 MiB (rows, pixels, colour and alpha), outside the heap: one field fits, four do not.
    const tight = { timeoutMs: 60_000, maxMemoryMb: 32 };
    const doc = await prepareDocument([await fx.plainPdf(1)], LIMITS);
    const image = bigSignaturePng();
    const fields = (n: number): StampField[] => Array.from({ length: n }, (_, i) => ({ page: 1, x: 10, y: 10 + i * 12, width: 40, height: 10, type: 'SIGNATURE' as const, value: null, image }));
    const seal = (n: number) => sealInSandbox({ original: doc.bytes, fields: fields(n), hide: [], certificate: certificate(doc), signer }, tight);
    pdfsigValid(await seal(1));
    await assert.rejects(seal(4), (err: unknown) => err instanceof AppError && err.code === 'INVALID_PDF' && /expands beyond the 32 MB limit/.test(err.message));
  });
});

describe('seal job: a late second run', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('cannot replace the committed sealed PDF, and leaves no file of its own behind', async () => {
    const a = person('late');
    const env = await createEnvelope(t, { title: 'Late seal', recipients: [a] });
    await signAs(t, recipientToken(env, a.email));
    const documentId = env.engineEnvelopeId;

    const written: string[] = [];
    const real = t.container.storage;
    const storage: BlobStorage = {
      put: async (key, bytes) => {
        written.push(key);
        return real.put(key, bytes);
      },
      putFile: (key, file) => real.putFile(key, file),
      get: (key) => real.get(key),
      getStream: (key) => real.getStream(key),
      delete: (key) => real.delete(key),
    };
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let startedSlow!: () => void;
    const slowStarted = new Promise<void>((r) => (startedSlow = r));
    const marker = (tag: string) => new TextEncoder().encode(`%PDF-1.7\n% sealed by run ${tag}\n%%EOF\n`);
    const job = (seal: SealFn) =>
      sealJob({
        db: t.container.db,
        repo: createLocalEngineRepo(),
        storage,
        notifier: createNotifier(),
        seal,
        envelopeIdOf: async () => env.envelopeId,
        lockAndSync: async (_tx, _id, work) => ({ value: await work() }),
      });
    // Run A took the job, then stalled (its lease lapsed); run B took it over and completed.
    const slow = job(async () => {
      startedSlow();
      await gate;
      return marker('A');
    });
    const fast = job(async () => marker('B'));
    const ctx = { jobId: 1, attempt: 1, maxAttempts: 10, workerId: 'test' };
    const runA = slow.handle({ documentId }, ctx);
    await slowStarted;
    await fast.handle({ documentId }, { ...ctx, attempt: 2 });
    release();
    await runA;

    const [row] = await t.container.db.select().from(engineDocuments).where(eq(engineDocuments.id, documentId));
    assert.equal(row.status, 'COMPLETED');
    const committed = await t.container.storage.get(row.signedKey!);
    assert.equal(new TextDecoder().decode(committed!), new TextDecoder().decode(marker('B')), 'the committed file is the run that committed');
    assert.equal(written.length, 2);
    assert.notEqual(written[0], written[1], 'each run writes under its own key');
    const lateKey = written.find((k) => k !== row.signedKey)!;
    assert.equal(await t.container.storage.get(lateKey), undefined, 'the late run removed its own file');
  });

  test('the seal job of the running app seals in the worker and completes the envelope', async () => {
    const a = person('full');
    const env = await createEnvelope(t, { title: 'Full seal', recipients: [a] });
    await signAs(t, recipientToken(env, a.email));
    await drain(t);
    const [row] = await t.container.db.select().from(engineDocuments).where(eq(engineDocuments.id, env.engineEnvelopeId));
    assert.equal(row.status, 'COMPLETED');
    assert.match(row.signedKey!, /^documents\/[^/]+\/signed-[0-9a-f-]{36}\.pdf$/);
    pdfsigValid((await t.container.storage.get(row.signedKey!))!);
  });
});
