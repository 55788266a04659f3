import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { RUN_TS } from './fixtures/run-ts.js';

const ROOT = path.resolve(import.meta.dirname, '..');

// In a fresh process: this one's other imports would load node-forge anyway.
test('the signer module does not load node-forge until it makes a development certificate', () => {
  const script = `
    import { createRequire } from 'node:module';
    const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/node-forge/'));
    const { generateDevP12 } = await import('./src/providers/certs/signer.ts');
    const before = loaded();
    generateDevP12('pw');
    console.log(JSON.stringify({ before, after: loaded() }));`;
  const out = execFileSync(process.execPath, [...RUN_TS, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out), { before: false, after: true });
});
