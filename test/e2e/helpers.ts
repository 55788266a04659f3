import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { PDF, rgb } from '@libpdf/core';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { createTestApp, type TestApp, type TestAppOptions } from '../harness.js';
import { freePort } from './free-port.js';

export { freePort };

/** Where end-to-end tests keep what a person may want to look at afterwards (screenshots, sealed PDFs). */
export const ARTIFACTS_DIR = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return path.join(ARTIFACTS_DIR, name);
}

export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Debian's chromium through playwright-core, headless, with everything that would reach the network on
 * its own (updates, sync, QUIC probes) switched off. One browser per test file (each file is a process of
 * its own): a call opens a fresh context in it (its own cookies, storage and cache, like a new profile),
 * and close() closes that context. The browser itself closes after the file's last test. A browser start
 * costs ~1 s of CPU and ~150 MB; files open several contexts each, three files at a time.
 */
export async function launchChromium(options: BrowserContextOptions = {}): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const context = await (await sharedBrowser()).newContext(options);
  // A bound on a hung page, not a speed: three files share two cores with their browsers in CI.
  context.setDefaultTimeout(60_000);
  return { context, close: () => context.close().catch(() => {}) };
}

let browser: Promise<Browser> | undefined;

function sharedBrowser(): Promise<Browser> {
  browser ??= chromium
    .launch({
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    .then((b) => {
      // A browser that crashed or was closed is launched again by the next call.
      b.on('disconnected', () => (browser = undefined));
      return b;
    }, (err: unknown) => {
      browser = undefined;
      throw err;
    });
  return browser;
}

// Registered at import, so on the file's root: it runs after every test and hook of the file.
after(async () => {
  const open = browser;
  browser = undefined;
  if (open) await (await open).close().catch(() => {});
});

/**
 * Collects what would go unnoticed in a headless page: script errors, console errors (failed loads,
 * "Refused to …" from the CSP) and CSP violation events, while the page's path starts with
 * `pathPrefix` ('' for everywhere). `ignore` drops console errors a test expects (a 4xx the page asked for).
 */
export async function watchPage(page: Page, pathPrefix = '/sign/', ignore?: RegExp): Promise<string[]> {
  const problems: string[] = [];
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  // Only while on the page under test: it may send the person elsewhere (a redirect, Checkout) when they finish.
  const watched = () => new URL(page.url()).pathname.startsWith(pathPrefix);
  page.on('pageerror', (err) => watched() && problems.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && watched() && !ignore?.test(msg.text())) problems.push(`console: ${msg.text()} (${msg.location().url})`);
  });
  return problems;
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: string[] }[] };

/** The page is no wider than `width` (no sideways scrolling) and axe-core finds no serious or critical violation. */
export async function assertPageFitsAndIsAccessible(page: Page, label: string, width: number): Promise<void> {
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scrollWidth <= width, `${label} at ${width} px is ${scrollWidth} px wide`);
  // The pages' CSP refuses inline scripts, so axe is evaluated through the DevTools protocol instead.
  await page.evaluate(AXE_SOURCE);
  const { violations } = await page.evaluate(async () =>
    (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: AxeViolation[] }> } }).axe.run(document, { resultTypes: ['violations'] }),
  );
  assert.deepEqual(
    violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`),
    [],
    `${label} at ${width} px`,
  );
}

/**
 * Agrees to electronic records and signatures when the signing page asks (issue 34.4), as a person
 * would; a page that does not ask (already agreed, nothing to sign) is left as it is.
 */
export async function consentIfAsked(page: Page): Promise<void> {
  await page.locator('#signing-app[data-ready="true"], #signing-app[data-step="consent"]').first().waitFor({ timeout: 60_000 });
  if ((await page.locator('#signing-app').getAttribute('data-step')) !== 'consent') return;
  await page.getByTestId('consent-check').check();
  await page.getByTestId('consent-submit').click();
}

/** Draws a signature-like stroke across the pad with real mouse moves (pointer events in the page). */
export async function drawOnCanvas(page: Page, selector: string): Promise<void> {
  const box = await page.locator(selector).boundingBox();
  if (!box) throw new Error(`${selector} is not visible`);
  await page.mouse.move(box.x + box.width * 0.12, box.y + box.height * 0.6);
  await page.mouse.down();
  for (let i = 1; i <= 40; i++) {
    const t = i / 40;
    await page.mouse.move(box.x + box.width * (0.12 + 0.76 * t), box.y + box.height * (0.55 - 0.22 * Math.sin(t * Math.PI * 4)));
  }
  await page.mouse.up();
}

/** A one-page letter-size contract with room for fields, made with @libpdf/core. */
export async function contractPdf(): Promise<Uint8Array> {
  const pdf = PDF.create();
  const page = pdf.addPage({ size: 'letter' });
  page.drawText('Services agreement', { x: 72, y: 720, size: 22, color: rgb(0, 0, 0) });
  page.drawText(
    'The client engages the contractor for the services described below. Both parties sign in the order shown; the sealed copy with its audit certificate is sent to each of them.',
    { x: 72, y: 680, size: 11, maxWidth: 468, lineHeight: 15 },
  );
  // Captions just under where the test places the fields (TEXT ends at 36.5% from the top, SIGNATURE at 74%).
  page.drawText('Company', { x: 64, y: 490, size: 9 });
  page.drawText('Client signature', { x: 64, y: 194, size: 9 });
  page.drawText('Contractor signature', { x: 420, y: 194, size: 9 });
  return pdf.save();
}

export type Api = {
  base: string;
  json<T = unknown>(method: string, url: string, body?: unknown): Promise<{ status: number; body: T }>;
  createEnvelope(pdf: Uint8Array, payload: unknown): Promise<{ status: number; body: any }>;
  download(url: string): Promise<{ status: number; type: string | null; bytes: Uint8Array }>;
};

/** The customer API over real HTTP, with one API key. */
export function apiClient(base: string, apiKey: string): Api {
  const auth = { authorization: `Bearer ${apiKey}` };
  return {
    base,
    async json(method, url, body) {
      const res = await fetch(base + url, {
        method,
        headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    },
    async createEnvelope(pdf, payload) {
      const form = new FormData();
      form.append('pdf', new Blob([Buffer.from(pdf)], { type: 'application/pdf' }), 'contract.pdf');
      form.append('payload', JSON.stringify(payload));
      const res = await fetch(`${base}/v1/envelopes`, { method: 'POST', headers: { ...auth, 'idempotency-key': randomUUID() }, body: form });
      return { status: res.status, body: await res.json() };
    },
    async download(url) {
      const res = await fetch(base + url, { headers: auth });
      return { status: res.status, type: res.headers.get('content-type'), bytes: new Uint8Array(await res.arrayBuffer()) };
    },
  };
}

/**
 * A test app a browser can reach: listening on 127.0.0.1 with the background worker running (sending,
 * sealing). Links must name the address the browser reaches, so the port is chosen before listening;
 * `options.env` adds to (or overrides) PUBLIC_URL and the worker settings.
 */
export async function startBrowserApp(options: TestAppOptions = {}): Promise<{ t: TestApp; base: string; api: Api }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await createTestApp({ ...options, env: { PUBLIC_URL: base, WORKER_ENABLED: 'true', SCHEDULER_INTERVAL_MS: '100', ...options.env } });
  try {
    await t.app.listen({ host: '127.0.0.1', port });
    await t.container.worker.start();
  } catch (err) {
    await t.close();
    throw err;
  }
  return { t, base, api: apiClient(base, t.customer.apiKey) };
}

/** Polls until `probe` returns a value (not undefined), or fails after `timeoutMs` with the last seen state. */
export async function waitFor<T>(what: string, probe: () => Promise<{ done: T | undefined; seen: unknown }>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let seen: unknown;
  for (;;) {
    const r = await probe();
    if (r.done !== undefined) return r.done;
    seen = r.seen;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(seen)}`);
    await sleep(150);
  }
}

/** Runs a command-line tool; resolves with its exit code and output whatever the code. */
export function run(command: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
