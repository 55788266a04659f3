// test-lane: once (the editor in Chromium; the field routes behind it run on both stores in field-patch.test.ts)
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { signInDashboard } from '../fixtures/dashboard.js';
import { type Api, artifactPath, assertPageFitsAndIsAccessible, contractPdf, launchChromium, run, startBrowserApp, waitFor, watchPage } from './helpers.js';

const SHOTS = process.env.SHOTS_DIR ?? '/tmp/shots-h-editor';
const LETTER = { width: 612, height: 792 };
const alice = { email: 'alice@example.com', name: 'Alice Able', role: 'SIGNER' };
const bob = { email: 'bob@example.com', name: 'Bob Baker', role: 'SIGNER' };

type Placed = { x: number; y: number };

/** Drags a palette button onto page 1 with real pointer moves; answers where it was let go, in points from the top-left. */
async function dragTool(page: Page, label: string, at: { fx: number; fy: number }): Promise<Placed> {
  const tool = page.locator('.tool', { hasText: new RegExp(`^${label}$`) });
  await page.getByTestId('page-1').scrollIntoViewIfNeeded();
  await tool.scrollIntoViewIfNeeded();
  const from = (await tool.boundingBox())!;
  const box = (await page.getByTestId('page-1').boundingBox())!;
  const to = { x: box.x + box.width * at.fx, y: box.y + box.height * at.fy };
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await page.mouse.down();
  for (let i = 1; i <= 12; i++) await page.mouse.move(from.x + ((to.x - from.x) * i) / 12, from.y + ((to.y - from.y) * i) / 12);
  await page.mouse.up();
  return { x: ((to.x - box.x) / box.width) * LETTER.width, y: ((to.y - box.y) / box.height) * LETTER.height };
}

const fieldCount = (page: Page) => page.locator('.field').count();

describe('the field editor in Chromium', () => {
  let t: TestApp;
  let base: string;
  let api: Api;
  let context: BrowserContext;
  let close: () => Promise<void>;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ({ t, base, api } = await startBrowserApp());
    ({ context, close } = await launchChromium({ viewport: { width: 1280, height: 1000 } }));
    const { sessionToken } = await signInDashboard(t);
    await context.addCookies([{ name: 'svc_session', value: sessionToken, url: base, httpOnly: true, sameSite: 'Lax' }]);
  });
  after(async () => {
    await close?.().catch(() => {});
    await t?.close();
  });

  test('place by drag and by keyboard, send; the signing sessions and the sealed stamps are where they were placed', async () => {
    const created = await api.createEnvelope(await contractPdf(), { title: 'Services agreement', recipients: [alice, bob], fields: [], draft: true });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.envelopeId as string;

    const page = await context.newPage();
    const problems = await watchPage(page, '/dashboard/');
    await page.goto(`${base}/dashboard/envelopes/${id}`);
    await page.getByRole('button', { name: 'Prepare fields and send' }).click();
    await page.locator('#editor[data-ready="true"]').waitFor({ timeout: 60_000 }).catch(async (err) => {
      throw new Error(`${err.message}; status: ${await page.locator('#status').textContent()}; ${problems.join('; ')}`);
    });
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });

    // Drag: Alice's signature, then Bob's text field.
    await page.getByLabel('Recipient', { exact: true }).selectOption({ label: `${alice.name} (${alice.email})` });
    const sig = await dragTool(page, 'Signature', { fx: 0.12, fy: 0.72 });
    await waitFor('the signature field', async () => ({ done: (await fieldCount(page)) === 1 || undefined, seen: await fieldCount(page) }));
    await page.getByLabel('Recipient', { exact: true }).selectOption({ label: `${bob.name} (${bob.email})` });
    const text = await dragTool(page, 'Text', { fx: 0.55, fy: 0.3 });
    await waitFor('the text field', async () => ({ done: (await fieldCount(page)) === 2 || undefined, seen: await fieldCount(page) }));

    // Keyboard only: Bob's signature added from the palette with Enter, then moved with the arrow keys.
    await page.locator('.tool', { hasText: /^Signature$/ }).focus();
    await page.keyboard.press('Enter');
    await waitFor('the keyboard field', async () => ({ done: (await fieldCount(page)) === 3 || undefined, seen: await fieldCount(page) }));
    const kbField = page.locator('.field:focus');
    const startX = Number(await kbField.getAttribute('data-x'));
    const startY = Number(await kbField.getAttribute('data-y'));
    for (let i = 0; i < 30; i++) await page.keyboard.press('Shift+ArrowDown');
    for (let i = 0; i < 25; i++) await page.keyboard.press('Shift+ArrowRight');
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowLeft');
    const kb: Placed = { x: (startX / 100) * LETTER.width + 247, y: (startY / 100) * LETTER.height + 300 };
    assert.ok(Math.abs((Number(await kbField.getAttribute('data-x')) / 100) * LETTER.width - kb.x) < 0.01);
    // A resize by keyboard: R, then Shift+ArrowRight widens by 10 pt.
    await page.keyboard.press('r');
    await page.keyboard.press('Shift+ArrowRight');
    await page.keyboard.press('r');
    await page.waitForFunction(() => /Saved/.test(document.getElementById('status')?.textContent ?? ''));
    // Without dragging (WCAG 2.5.7): the text field's width typed in points.
    await page.locator('.field[data-type="TEXT"]').focus();
    await page.getByLabel('Width').fill('200');
    await page.getByLabel('Width').press('Enter');
    assert.equal(await page.getByLabel('Width').inputValue(), '200.0');

    // The text field was dropped on the contract's paragraph: the editor warns, without refusing.
    assert.equal(await page.locator('.field.overlaps').count() >= 1, true, 'a field over text is flagged');

    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 1000 });
      await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor();
      await assertPageFitsAndIsAccessible(page, 'field editor', width);
      await page.screenshot({ path: `${SHOTS}/editor-${width}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 1000 });

    // The saved placements, through the API, before sending (the debounced keyboard save included).
    const draft = await waitFor('saved placements', async () => {
      const r = await api.json<{ fields: { type: string; recipientEmail: string; positionX: number; positionY: number; width: number }[] }>('GET', `/v1/envelopes/${id}`);
      const k = r.body.fields.find((f) => f.type === 'SIGNATURE' && f.recipientEmail === bob.email);
      return { done: k && Math.abs((k.positionY / 100) * LETTER.height - kb.y) < 1 && k.width > 0 ? r.body : undefined, seen: r.body.fields };
    });
    assert.equal(draft.fields.length, 3);
    const textField = await waitFor('the typed width', async () => {
      const f = (await api.json<{ fields: { type: string; width: number }[] }>('GET', `/v1/envelopes/${id}`)).body.fields.find((x) => x.type === 'TEXT')!;
      return { done: Math.abs((f.width / 100) * LETTER.width - 200) < 0.01 ? f : undefined, seen: f };
    });
    assert.ok(textField);

    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForURL(`${base}/dashboard/envelopes/${id}`, { timeout: 60_000 });
    assert.deepEqual(problems, []);

    // The recipients' sessions: each field where it was placed, to within a point.
    const env = (await api.json<{ status: string; recipients: { email: string; signingUrl: string }[] }>('GET', `/v1/envelopes/${id}`)).body;
    const tokenOf = (email: string) => new URL(env.recipients.find((r) => r.email === email)!.signingUrl).pathname.split('/').pop()!;
    const sessionOf = async (email: string) => (await fetch(`${base}/sign/${tokenOf(email)}/session`)).json() as Promise<{ fields: { fieldId: number; type: string; page: number; positionX: number; positionY: number; width: number; height: number }[] }>;
    const pts = (f: { positionX: number; positionY: number }) => ({ x: (f.positionX / 100) * LETTER.width, y: (f.positionY / 100) * LETTER.height });
    const near = (a: Placed, b: Placed, what: string) => assert.ok(Math.abs(a.x - b.x) <= 1 && Math.abs(a.y - b.y) <= 1, `${what}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    const aliceFields = (await sessionOf(alice.email)).fields;
    const bobFields = (await sessionOf(bob.email)).fields;
    near(pts(aliceFields.find((f) => f.type === 'SIGNATURE')!), sig, 'Alice signature');
    near(pts(bobFields.find((f) => f.type === 'TEXT')!), text, 'Bob text');
    near(pts(bobFields.find((f) => f.type === 'SIGNATURE')!), kb, 'Bob signature (keyboard)');

    // Both sign (over HTTP, as their pages would); the sealed PDF carries the stamps in those boxes.
    const sign = async (email: string, body: unknown) => {
      await fetch(`${base}/sign/${tokenOf(email)}/consent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      const res = await fetch(`${base}/sign/${tokenOf(email)}/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      assert.equal(res.status, 200, await res.text());
    };
    await sign(alice.email, { fields: [], signature: { kind: 'typed', text: 'Alice' } });
    await sign(bob.email, { fields: [{ fieldId: bobFields.find((f) => f.type === 'TEXT')!.fieldId, value: 'ACME' }], signature: { kind: 'typed', text: 'Bob' } });
    await waitFor('COMPLETED', async () => {
      const r = await api.json<{ status: string }>('GET', `/v1/envelopes/${id}`);
      return { done: r.body.status === 'COMPLETED' || undefined, seen: r.body.status };
    });
    const signed = await waitFor('the sealed PDF', async () => {
      const d = await api.download(`/v1/envelopes/${id}/download`);
      return { done: d.status === 200 ? d.bytes : undefined, seen: d.status };
    });
    const path = artifactPath('field-editor-signed.pdf');
    writeFileSync(path, signed);
    const bbox = await run('pdftotext', ['-bbox', '-f', '1', '-l', '1', path, '-']);
    const word = (w: string) => {
      const m = new RegExp(`xMin="([\\d.]+)" yMin="([\\d.]+)" xMax="([\\d.]+)" yMax="([\\d.]+)">${w}<`).exec(bbox.stdout);
      assert.ok(m, `${w} is stamped on page 1`);
      return { xMin: Number(m[1]), yMin: Number(m[2]), xMax: Number(m[3]), yMax: Number(m[4]) };
    };
    // A text stamp starts 2 pt inside its box (the stamp's padding) and sits within its height.
    const inBox = (w: string, f: { positionX: number; positionY: number; width: number; height: number }) => {
      const b = word(w);
      const box = { x: (f.positionX / 100) * LETTER.width, y: (f.positionY / 100) * LETTER.height, w: (f.width / 100) * LETTER.width, h: (f.height / 100) * LETTER.height };
      assert.ok(Math.abs(b.xMin - (box.x + 2)) <= 1, `${w} starts at ${b.xMin}, its box at ${box.x}`);
      assert.ok(b.yMin >= box.y - 1 && b.yMax <= box.y + box.h + 1 && b.xMax <= box.x + box.w + 1, `${w} ${JSON.stringify(b)} inside ${JSON.stringify(box)}`);
    };
    inBox('ACME', bobFields.find((f) => f.type === 'TEXT')!);
    inBox('Alice', aliceFields.find((f) => f.type === 'SIGNATURE')!);
    inBox('Bob', bobFields.find((f) => f.type === 'SIGNATURE')!);
  });

  test('a prepare link opens the same editor with no session of its own; a field added by keyboard is saved to that draft', async () => {
    const created = await api.createEnvelope(await contractPdf(), { title: 'Embedded draft', recipients: [alice], fields: [], draft: true });
    const id = created.body.envelopeId as string;
    const minted = await api.json<{ url: string }>('POST', `/v1/envelopes/${id}/prepare-link`);
    assert.equal(minted.status, 201);
    // This browser is also signed in to the dashboard: the link's own token must still be what authorizes the saves.
    const page = await context.newPage();
    const problems = await watchPage(page, '/prepare/');
    await page.goto(minted.body.url);
    await page.locator('#editor[data-ready="true"]').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
    await page.locator('.tool', { hasText: /^Date$/ }).focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /Added/.test(document.getElementById('status')?.textContent ?? ''));
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 900 });
      await assertPageFitsAndIsAccessible(page, 'prepare link', width);
      await page.screenshot({ path: `${SHOTS}/prepare-link-${width}.png`, fullPage: true });
    }
    const fields = (await api.json<{ fields: { type: string }[] }>('GET', `/v1/envelopes/${id}`)).body.fields;
    assert.deepEqual(fields.map((f) => f.type), ['DATE']);
    assert.deepEqual(problems, []);
  });
});
