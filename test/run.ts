/**
 * `npm test`: the test files of this lane (test/lanes.ts), several at a time, through node:test.
 * With file arguments it runs just those. TEST_CONCURRENCY sets how many files run at once; the default
 * is one more than the CPUs, because files spend part of their time waiting on browsers, child processes
 * and timers (measured on 2 CPUs: 3 at a time took the PGlite lane from 7m51s to 7m03s). Every file keeps
 * its own ports, directories and database, so any order is safe; those that start processes or a browser
 * start first (test/lanes.ts, runOrder).
 */
import { spawn } from 'node:child_process';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { RUN_TS } from './fixtures/run-ts.js';
import { filesForLane, runOrder, testFiles } from './lanes.js';

const lane = process.env.DATABASE_URL ? 'postgres' : 'pglite';
const args = process.argv.slice(2);
const named = args.filter((a) => a.endsWith('.ts'));
const flags = args.filter((a) => !a.endsWith('.ts'));
const files = named.length ? named : runOrder(filesForLane(lane));
const concurrency = Number(process.env.TEST_CONCURRENCY) || availableParallelism() + 1;
if (!named.length) {
  const skipped = testFiles().length - files.length;
  console.log(`# ${files.length} test files on ${lane === 'postgres' ? 'PostgreSQL' : 'PGlite'}, ${concurrency} at a time${skipped ? ` (${skipped} marked "test-lane: once" ran on PGlite)` : ''}`);
}

// Node.js's compile cache (V8's code for every module, ours once their types are stripped), shared by the
// test processes and the servers they start: about 0.35 s of CPU less per process once the first has
// filled it (errors.test.ts, three turns). Kept between runs in the temp directory; keyed by content.
const env = { NODE_COMPILE_CACHE: path.join(tmpdir(), 'signet-test-compile-cache'), ...process.env };
// PGlite's WebAssembly in baseline code only: a test process is too short-lived to repay optimising its
// hot functions on background threads (about a sixth less CPU over envelopes, webhooks and account-logo
// in one process, four turns each: 13.0 s against 15.9 s). The servers tests start keep V8's default.
const child = spawn(process.execPath, [...RUN_TS, '--liftoff-only', '--test', `--test-concurrency=${concurrency}`, ...flags, ...files], {
  cwd: path.dirname(import.meta.dirname),
  env,
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
