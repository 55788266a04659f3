// test-lane: once (the test runner's own module resolution; no database)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { RUN_TS } from './fixtures/run-ts.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * scripts/ts-resolve.mjs answers the resolutions Node.js makes slowly (a parse of the package's whole
 * package.json each time) itself: relative imports inside a package with a "type", and the bare
 * specifiers our files import, once each. Counted by a hook registered before it, which sees only what
 * it hands on to Node.js, in a fresh process that imports the app.
 */
test('importing the app, relative imports inside drizzle-orm never reach Node.js, and each bare specifier of ours reaches it once', () => {
  const probe = `
    import { registerHooks } from 'node:module';
    const seen = { drizzleRelative: 0, ours: {} };
    registerHooks({ resolve(specifier, context, next) {
      const parent = context.parentURL ?? '';
      if (parent.includes('/node_modules/drizzle-orm/') && specifier.startsWith('.')) seen.drizzleRelative++;
      if (parent.endsWith('.ts') && !parent.includes('/node_modules/') && !/^(\\.|node:|file:)/.test(specifier)) {
        const key = context.conditions?.includes('require') ? specifier + ' (require)' : specifier;
        seen.ours[key] = (seen.ours[key] ?? 0) + 1;
      }
      return next(specifier, context);
    } });
    globalThis.resolutionsSeen = seen;`;
  const script = `
    const { buildApp } = await import('./src/app.ts');
    console.log(JSON.stringify({ app: typeof buildApp, ...globalThis.resolutionsSeen }));`;
  const probeUrl = `data:text/javascript,${encodeURIComponent(probe)}`;
  const out = execFileSync(process.execPath, ['--import', probeUrl, ...RUN_TS, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  const seen = JSON.parse(out.trim().split('\n').at(-1)!) as { app: string; drizzleRelative: number; ours: Record<string, number> };
  assert.equal(seen.app, 'function');
  assert.equal(seen.drizzleRelative, 0);
  assert.ok((seen.ours['drizzle-orm'] ?? 0) === 1, `drizzle-orm resolved by Node ${seen.ours['drizzle-orm']} times`);
  assert.deepEqual(Object.entries(seen.ours).filter(([, n]) => n > 1), []);
});
