/**
 * A download streams the PDF from its store to the socket: four concurrent downloads of a 25 MiB
 * document hold a few MiB, not four copies of it (read whole, they held about 100 MiB and more).
 * Measured in a child process of its own (test/fixtures/download-memory.ts), in memory, not time.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startS3rver, type TestS3 } from './fixtures/s3rver.js';
import { RUN_TS } from './fixtures/run-ts.js';

const SCRIPT = path.join(import.meta.dirname, 'fixtures', 'download-memory.ts');
const MB = 1024 * 1024;
const onPostgres = Boolean(process.env.DATABASE_URL);

type Measured = { peak: number; downloads: { status: number; contentLength: number; bytes: number; sha256: string }[] };

async function measure(file: string, env: Record<string, string>): Promise<Measured> {
  const childEnv = { ...process.env };
  delete childEnv.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, [...RUN_TS, SCRIPT, JSON.stringify({ file, env })], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (err += b));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`download-memory exited ${code}: ${err}`);
  return JSON.parse(out.trim().split('\n').pop()!);
}

describe('four concurrent downloads of a 25 MiB PDF', () => {
  let dir: string;
  let file: string;
  let digest: string;
  let s3: TestS3 | undefined;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'signet-download-memory-'));
    file = path.join(dir, 'big.pdf');
    const bytes = randomBytes(25 * MB);
    writeFileSync(file, bytes);
    digest = createHash('sha256').update(bytes).digest('hex');
  });
  after(async () => {
    await s3?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Local and S3 stores do the same on either database: the PGlite lane runs them. The postgres
  // driver runs on PostgreSQL (on PGlite the blobs would live in this process's WASM memory).
  const cases: [string, boolean, () => Promise<Record<string, string>>][] = [
    ['local', !onPostgres, async () => ({ STORAGE_DRIVER: 'local' })],
    ['s3', !onPostgres, async () => (s3 = await startS3rver()).env],
    ['postgres', onPostgres, async () => ({ STORAGE_DRIVER: 'postgres' })],
  ];
  for (const [driver, runs, env] of cases) {
    test(`${driver} store: each gets the whole file with its Content-Length, and the server holds far less than one copy`, { skip: !runs && `runs in the ${onPostgres ? 'PGlite' : 'PostgreSQL'} lane` }, async (t) => {
      const { peak, downloads } = await measure(file, await env());
      t.diagnostic(`${driver}: ${(peak / MB).toFixed(1)} MiB held at most`);
      for (const d of downloads) assert.deepEqual(d, { status: 200, contentLength: 25 * MB, bytes: 25 * MB, sha256: digest });
      assert.ok(peak < 16 * MB, `four downloads held ${(peak / MB).toFixed(1)} MiB at once`);
    });
  }
});
