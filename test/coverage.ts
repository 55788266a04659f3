/**
 * `npm run coverage`: V8's coverage of src/ over the PGlite lane, the documenso suites and, when
 * DATABASE_URL names a server, the PostgreSQL lane (in a database of its own there), merged by c8 into
 * one report: a summary on stdout, HTML in coverage/. Every process and worker thread the tests start
 * writes its own coverage file. Not part of CI: it runs the suite again, slower.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.dirname(import.meta.dirname);
const data = path.join(root, 'coverage', 'v8');
rmSync(path.join(root, 'coverage'), { recursive: true, force: true });
// The harness keeps its migrated PGlite image between runs (test/harness.ts): remove it, so that this run
// makes it again and the code that makes it is counted.
for (const name of readdirSync(tmpdir())) if (name.startsWith('signet-pglite-image-')) rmSync(path.join(tmpdir(), name), { force: true });

const { DATABASE_URL, ...withoutDatabase } = process.env;
const run = (what: string, script: string, databaseUrl?: string): boolean => {
  console.log(`# coverage: ${what}`);
  // No compile cache (test/run.ts sets one): code from the cache is counted less precisely.
  const env = { ...withoutDatabase, NODE_V8_COVERAGE: data, NODE_DISABLE_COMPILE_CACHE: '1', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
  return spawnSync('npm', ['run', script, '--silent'], { cwd: root, stdio: 'inherit', env }).status === 0;
};

let passed = run('the PGlite lane', 'test');
passed = run('the documenso suites', 'test:documenso') && passed;
if (DATABASE_URL) {
  const server = new URL(DATABASE_URL);
  const db = `signet_coverage_${randomBytes(4).toString('hex')}`;
  const admin = (sql: string) => spawnSync('psql', [DATABASE_URL, '-qc', sql], { stdio: 'inherit' }).status === 0;
  if (!admin(`CREATE DATABASE ${db}`)) throw new Error(`coverage: could not create ${db} on ${server.host}`);
  try {
    passed = run('the PostgreSQL lane', 'test', Object.assign(server, { pathname: `/${db}` }).href) && passed;
  } finally {
    admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  }
} else {
  console.log('# coverage: DATABASE_URL is not set, so the PostgreSQL lane is left out of the report');
}

// Each process's file covers every script it ran, node_modules too (4 GB over a run, more than c8 can
// hold): keep what src/ ran (Node.js strips the types in place, so offsets are the .ts file's own).
const ours = pathToFileURL(path.join(root, 'src')).href + '/';
for (const name of readdirSync(data)) {
  const file = path.join(data, name);
  const raw = JSON.parse(readFileSync(file, 'utf8')) as { result: { url: string }[]; 'source-map-cache'?: Record<string, unknown> };
  raw.result = raw.result.filter((s) => s.url.startsWith(ours));
  if (raw['source-map-cache']) raw['source-map-cache'] = Object.fromEntries(Object.entries(raw['source-map-cache']).filter(([url]) => url.startsWith(ours)));
  writeFileSync(file, JSON.stringify(raw));
}

const c8 = path.join(root, 'node_modules', '.bin', 'c8');
spawnSync(c8, ['report', '--temp-directory', data, '--reports-dir', path.join(root, 'coverage'), '--all', '--src', 'src', '--include', 'src/**', '--exclude', 'src/**/*.d.ts', '--reporter', 'text-summary', '--reporter', 'html'], { cwd: root, stdio: 'inherit' });
process.exitCode = passed ? 0 : 1;
