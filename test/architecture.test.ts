// test-lane: once (opens no database)
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

/** The layer rules of docs/architecture.md, read off the import graph so a new file cannot break them unnoticed. */
const root = path.resolve(import.meta.dirname, '..');
const src = path.join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.(ts|js)$/.test(name) ? [p] : [];
  });
}

const files = sourceFiles(src).filter((f) => f.endsWith('.ts'));
const rel = (f: string) => path.relative(src, f).split(path.sep).join('/');

/** Every relative import of a file, as a path under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) => m[1]);
  return specs.map((s) => rel(path.resolve(path.dirname(file), s)));
}

function violations(from: RegExp, to: RegExp): string[] {
  return files.filter((f) => from.test(rel(f))).flatMap((f) => importsOf(f).filter((i) => to.test(i)).map((i) => `${rel(f)} → ${i}`));
}

test('nothing below the edge imports src/http', () => {
  assert.deepEqual(violations(/^(pdf|engine|jobs|providers|db|lib)\//, /^http\//), []);
  assert.deepEqual(violations(/^(errors|context)\.ts$/, /./), [], 'errors.ts and context.ts import nothing of ours');
});

test('src/jobs knows no module and no engine', () => {
  assert.deepEqual(violations(/^jobs\//, /^(modules|engine)\//), []);
});

test('src/http imports nothing from src/modules', () => {
  assert.deepEqual(violations(/^http\//, /^modules\//), []);
});

test('services, repos and job definitions know nothing of Fastify', () => {
  const offenders = files
    .filter((f) => /\.(service|repo|jobs)\.ts$/.test(f) || rel(f).startsWith('engine/') || rel(f).startsWith('jobs/'))
    .filter((f) => /from 'fastify'|from '@fastify\//.test(readFileSync(f, 'utf8')))
    .map(rel);
  assert.deepEqual(offenders, []);
});

test('job definitions live in their modules, not in src/jobs', () => {
  assert.equal(existsSync(path.join(src, 'jobs', 'definitions')), false);
  assert.equal(existsSync(path.join(src, 'webhooks')), false, 'the webhook transport lives under providers/webhooks');
});

test('no source file is over 400 lines', () => {
  const long = files.map((f) => [rel(f), readFileSync(f, 'utf8').split('\n').length] as const).filter(([, n]) => n > 400);
  assert.deepEqual(long, []);
});
