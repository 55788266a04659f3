/**
 * Which test files `npm test` runs. On PGlite (no DATABASE_URL) it runs every file; with DATABASE_URL it
 * runs again every file whose result can depend on the store, which is every file not marked otherwise.
 * A file that runs in the PGlite lane only says so, and why, in a line of its own near its top:
 *
 *   // test-lane: once (browser pages; the routes behind them run on both stores in their own files)
 *
 * The rule: a file whose result can depend on SQL behaviour (transactions, locks, the queue, the pool,
 * idempotency, money, paging and sorting, stored types, each module's own routes) runs on both; a file
 * that tests what sits over those routes (pages, languages, the OpenAPI document and client, errors and
 * HTTP edges, MCP tools, email rendering) or opens no database runs once, its marker naming where the
 * SQL it reaches runs on both. Running on both is the default so that a new test of SQL, locks or the
 * pool cannot skip PostgreSQL by accident; test/lanes.test.ts checks the markers.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

export type Lane = 'pglite' | 'postgres';

export const TEST_ROOT = import.meta.dirname;

/** Every test file under test/, relative to the repository, in a stable order; the cluster test has its own command. */
export function testFiles(root = TEST_ROOT): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts') && !f.split(path.sep).includes('cluster') && !f.split(path.sep).includes('node_modules'))
    .map((f) => path.join(path.basename(root), f))
    .sort();
}

const MARKER = /^\/\/ test-lane: (\S+)(.*)$/m;

/** The reason a file runs once, or undefined when it runs on both stores; a malformed marker throws. */
export function onceReason(text: string, file = 'a test file'): string | undefined {
  const m = MARKER.exec(text);
  if (!m) return undefined;
  const reason = m[2].trim().replace(/^\((.*)\)$/, '$1').trim();
  if (m[1] !== 'once') throw new Error(`${file}: unknown test lane "${m[1]}" (the one lane marker is "// test-lane: once (why)")`);
  if (reason.length < 10) throw new Error(`${file}: "// test-lane: once" must say why the file need not run on PostgreSQL`);
  return reason;
}

/** Whether a file opens a database, directly or through the harness and the fixtures that start apps. */
export function usesDatabase(text: string): boolean {
  return /\b(createTestApp|openTestDatabase|openDatabase|startBrowserApp|DATABASE_URL)\b/.test(text);
}

export function filesForLane(lane: Lane, root = TEST_ROOT): string[] {
  const repo = path.dirname(root);
  return testFiles(root).filter((f) => lane === 'pglite' || onceReason(readFileSync(path.join(repo, f), 'utf8'), f) === undefined);
}

/** A file that starts other processes or a browser: it waits on them, so it runs longest (up to minutes). */
export function startsProcesses(text: string): boolean {
  return /\b(RUN_TS|spawn|execFile|execFileSync|launchChromium|startBrowserApp)\b/.test(text);
}

/**
 * The order `npm test` starts files in: those that start processes or a browser first, each group in the
 * order given. With a few files at a time, a long file started last is a tail nothing else overlaps
 * (measured on 2 CPUs: the "s" files, storage-drivers, seal-certificate and scale-state, ran for up to
 * three minutes each at the end of an alphabetical run).
 */
export function runOrder(files: string[], root = TEST_ROOT): string[] {
  const repo = path.dirname(root);
  const slow = new Set(files.filter((f) => startsProcesses(readFileSync(path.join(repo, f), 'utf8'))));
  return [...files.filter((f) => slow.has(f)), ...files.filter((f) => !slow.has(f))];
}
