// test-lane: once (server processes on their own PGlite directory whatever the suite's store)
/**
 * The flags a server process replaces itself with (cli.ts: V8_FLAGS, MALLOC_ENV), read from the
 * running process's command line, and an operator's own value kept (docs/operating.md: Memory).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, test } from 'node:test';
import { OPS_TOKEN, seedPgliteDataDir } from './harness.js';
import { RUN_TS } from './fixtures/run-ts.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const tmp = mkdtempSync(path.join(tmpdir(), 'signet-flags-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** `signet serve` started with these node flags: its command line and environment once it listens, then stopped. */
async function processOf(nodeFlags: string[], extraEnv: Record<string, string> = {}): Promise<{ argv: string[]; env: Map<string, string> }> {
  const dataDir = mkdtempSync(path.join(tmp, 'data-'));
  await seedPgliteDataDir(dataDir);
  const { DATABASE_URL: _url, NODE_TEST_CONTEXT: _ctx, MALLOC_ARENA_MAX: _arenas, MALLOC_MMAP_THRESHOLD_: _mmap, ...env } = process.env;
  const proc = spawn(process.execPath, [...nodeFlags, ...RUN_TS, 'src/cli.ts', 'serve'], {
    cwd: ROOT,
    env: { ...env, ...extraEnv, EMBEDDED_DB: 'pglite', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', OPS_TOKEN, LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_MS: '0', WORKER_ENABLED: 'false' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  try {
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: proc.stdout! }).on('line', (line) => /listening on /.test(line) && resolve());
      void exited.then(() => reject(new Error('signet serve exited before listening')));
    });
    const entries = readFileSync(`/proc/${proc.pid}/environ`, 'utf8').split('\0').filter(Boolean);
    return {
      argv: readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8').split('\0'),
      env: new Map(entries.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])),
    };
  } finally {
    proc.kill('SIGTERM');
    await exited;
  }
}

describe('the server process', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  test('starts with one WebAssembly compilation thread and 8 MiB semi-spaces', async () => {
    const { argv } = await processOf([]);
    assert.ok(argv.includes('--wasm-num-compilation-tasks=1'), argv.join(' '));
    assert.ok(argv.includes('--max-semi-space-size=8'), argv.join(' '));
  });

  test("maps malloc's blocks of 32 KiB and more on their own, with two arenas", async () => {
    const { env } = await processOf([]);
    assert.equal(env.get('MALLOC_MMAP_THRESHOLD_'), '32768');
    assert.equal(env.get('MALLOC_ARENA_MAX'), '2');
  });

  test("keeps an operator's own malloc settings", async () => {
    const { env } = await processOf([], { MALLOC_MMAP_THRESHOLD_: '131072' });
    assert.equal(env.get('MALLOC_MMAP_THRESHOLD_'), '131072');
    assert.equal(env.get('MALLOC_ARENA_MAX'), '2');
  });

  test("keeps an operator's own value", async () => {
    const { argv } = await processOf(['--wasm-num-compilation-tasks=2']);
    assert.deepEqual(argv.filter((a) => a.startsWith('--wasm-num-compilation-tasks')), ['--wasm-num-compilation-tasks=2']);
    assert.ok(argv.includes('--max-semi-space-size=8'), argv.join(' '));
  });
});
