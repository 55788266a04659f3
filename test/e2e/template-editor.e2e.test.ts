// test-lane: once (pages in Chromium; the routes behind them run on both stores in test/template-fields.test.ts)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { signInDashboard } from '../fixtures/dashboard.js';
import { type Api, assertPageFitsAndIsAccessible, contractPdf, launchChromium, startBrowserApp, watchPage } from './helpers.js';

const SHOTS = process.env.SHOTS_DIR ?? '/tmp/shots-h-tpl';
const LETTER = { width: 612, height: 792 };
const TITLE = 'Tenancy agreement';

type Placed = { x: number; y: number };
type Field = { fieldId: number; type: string; recipientEmail: string; page: number; positionXPercent: number; positionYPercent: number; widthPercent: number; heightPercent: number };

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

const pts = (f: { positionXPercent: number; positionYPercent: number }): Placed => ({ x: (f.positionXPercent / 100) * LETTER.width, y: (f.positionYPercent / 100) * LETTER.height });
const near = (a: Placed, b: Placed, what: string) => assert.ok(Math.abs(a.x - b.x) <= 1 && Math.abs(a.y - b.y) <= 1, `${what}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
/** A field's placement as the page shows it (data-x, data-y in percent), in points. */
const shown = async (page: Page, fieldId: number): Promise<Placed> => {
  const el = page.getByTestId(`field-${fieldId}`);
  return pts({ positionXPercent: Number(await el.getAttribute('data-x')), positionYPercent: Number(await el.getAttribute('data-y')) });
};

async function openEditor(page: Page, problems: string[]) {
  await page.locator('#editor[data-ready="true"]').waitFor({ timeout: 60_000 }).catch(async (err) => {
    throw new Error(`${err.message}; status: ${await page.locator('#status').textContent()}; ${problems.join('; ')}`);
  });
  await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
}

describe('the template field editor in Chromium', () => {
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

  test('from the templates list: drag a signature for slot 1, move it by keyboard, reload, Done; an envelope made from the template has it where it was left', async () => {
    // A template with two SIGNER slots, one signature each (every SIGNER slot needs one to be created).
    const sig = (recipientId: number, x: number) => ({ type: 'SIGNATURE', recipientId, page: 1, positionXPercent: x, positionYPercent: 85, widthPercent: 25, heightPercent: 5 });
    const payload = { title: TITLE, recipients: [1, 2].map((n) => ({ email: `slot${n}@example.com`, name: `Slot ${n}`, role: 'SIGNER' })), fields: [sig(1, 10), sig(2, 60)] };
    const form = new FormData();
    form.append('file', new Blob([Buffer.from(await contractPdf())], { type: 'application/pdf' }), 'tenancy.pdf');
    form.append('payload', JSON.stringify(payload));
    const res = await fetch(`${base}/v1/templates`, { method: 'POST', headers: { authorization: `Bearer ${t.customer.apiKey}` }, body: form });
    const created = (await res.json()) as { templateId: string; fields: Field[] };
    assert.equal(res.status, 201, JSON.stringify(created));
    const id = created.templateId;

    const page = await context.newPage();
    const problems = await watchPage(page, '/dashboard/');

    // The list: the template, its slots, and its "Edit fields" link; it fits and passes axe at both widths.
    await page.goto(`${base}/dashboard/templates`);
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 1000 });
      await assertPageFitsAndIsAccessible(page, 'templates list', width);
      await page.screenshot({ path: `${SHOTS}/template-list-${width}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 1000 });
    await page.getByRole('link', { name: `Edit fields of ${TITLE}` }).click();
    await page.waitForURL(`${base}/dashboard/templates/${id}/prepare`);
    await openEditor(page, problems);
    assert.equal(await page.locator('#send').count(), 0, 'a template has no Send');
    assert.equal(await page.locator('.field').count(), 2, "the template's own two signatures are shown");

    // Drag: a signature for slot 1, let go over an empty part of the page.
    await page.getByLabel('Recipient slot', { exact: true }).selectOption({ label: '1: Slot 1 (slot1@example.com)' });
    const dropped = await dragTool(page, 'Signature', { fx: 0.5, fy: 0.5 });
    await page.waitForFunction(() => /Added/.test(document.getElementById('status')?.textContent ?? ''));
    const added = page.locator('.field:focus');
    const fieldId = Number((await added.getAttribute('data-testid'))!.replace('field-', ''));
    assert.equal(fieldId, 3);
    assert.equal(await added.getAttribute('data-type'), 'SIGNATURE');
    near(await shown(page, fieldId), dropped, 'dropped');

    // Keyboard: 30 pt down, 20 pt right, 3 pt back left, on the focused field.
    for (let i = 0; i < 3; i++) await page.keyboard.press('Shift+ArrowDown');
    for (let i = 0; i < 2; i++) await page.keyboard.press('Shift+ArrowRight');
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowLeft');
    const moved: Placed = { x: dropped.x + 17, y: dropped.y + 30 };
    near(await shown(page, fieldId), moved, 'moved by keyboard');
    await page.waitForFunction(() => /Saved/.test(document.getElementById('status')?.textContent ?? ''));

    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 1000 });
      await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor();
      await assertPageFitsAndIsAccessible(page, 'template editor', width);
      await page.screenshot({ path: `${SHOTS}/template-editor-${width}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 1000 });

    // Reload: the field is where it was left, for slot 1.
    await page.reload();
    await openEditor(page, problems);
    assert.equal(await page.locator('.field').count(), 3);
    near(await shown(page, fieldId), moved, 'after reload');
    assert.match((await page.getByTestId(`field-${fieldId}`).textContent()) ?? '', /for Slot 1/);

    // One more nudge, then "Done" at once: the move still being debounced is saved before the list opens.
    await page.getByTestId(`field-${fieldId}`).focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    const final: Placed = { x: moved.x, y: moved.y + 2 };
    await page.getByRole('link', { name: 'Done' }).click();
    await page.waitForURL(`${base}/dashboard/templates`, { timeout: 60_000 }).catch(async (err) => {
      throw new Error(`${err.message}; at ${page.url()}; status: ${await page.locator('#status').textContent().catch(() => '?')}; ${problems.join('; ')}`);
    });
    assert.deepEqual(problems, []);

    // The template, and a draft envelope made from it: slot 1's new signature is where it was placed.
    const tpl = (await api.json<{ fields: Field[] }>('GET', `/v1/templates/${id}`)).body;
    near(pts(tpl.fields.find((f) => f.fieldId === fieldId)!), final, 'on the template');
    const people = [{ id: 1, email: 'tenant@example.com', name: 'Tenant' }, { id: 2, email: 'owner@example.com', name: 'Owner' }];
    const made = await fetch(`${base}/v1/templates/${id}/from-template`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.customer.apiKey}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ recipients: people, sendImmediately: false }),
    });
    const envelope = (await made.json()) as { status: string; fields: Field[] };
    assert.equal(made.status, 201, JSON.stringify(envelope));
    assert.equal(envelope.status, 'DRAFT');
    const tenantSigs = envelope.fields.filter((f) => f.type === 'SIGNATURE' && f.recipientEmail === people[0].email);
    assert.equal(tenantSigs.length, 2, JSON.stringify(envelope.fields));
    const placed = tenantSigs.find((f) => f.positionYPercent !== 85)!;
    near(pts(placed), final, 'on the envelope');
    assert.equal(placed.page, 1);
    assert.ok(Math.abs((placed.widthPercent / 100) * LETTER.width - 180) < 0.01, 'the default signature width, 180 pt');
  });
});
