// test-lane: once (opens no database)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { RUN_TS } from './fixtures/run-ts.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * The collection a server runs once started (main.ts: settleStartMemory) gives back the young
 * generation a start grew to its bound, in a fresh process with the server's 8 MiB semi-spaces. Sizes
 * of V8's spaces, not timings.
 */
test("collectGarbage('shrink') shrinks a young generation grown to its bound", () => {
  const script = `
    import { getHeapSpaceStatistics } from 'node:v8';
    const { collectGarbage } = await import('./src/lib/gc.ts');
    const space = (name) => getHeapSpaceStatistics().find((s) => s.space_name === name);
    // What a start does: keeps some objects, drops most, long enough for the young generation to grow.
    const kept = [];
    for (let i = 0; i < 400_000; i++) {
      const o = { i, s: 'x'.repeat(i % 64) };
      if (i % 50 === 0) kept.push(o);
    }
    const before = space('new_space').space_size;
    collectGarbage('shrink');
    const after = space('new_space').space_size;
    console.log(JSON.stringify({ before, after, kept: kept.length }));`;
  const out = execFileSync(process.execPath, ['--max-semi-space-size=8', ...RUN_TS, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  const { before, after } = JSON.parse(out.trim().split('\n').at(-1)!);
  assert.ok(before >= 8 * 1024 * 1024, `the young generation grew (${before} bytes)`);
  assert.ok(after <= before / 4, `shrunk from ${before} to ${after} bytes`);
});
