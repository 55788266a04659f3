// test-lane: once (renders emails in Chromium; opens no database)
/**
 * Every email's HTML in Chromium at a desktop mail pane's width (600 px) and a phone's (375 px): it fits
 * without sideways scrolling, axe-core finds nothing serious, and a screenshot is kept in
 * test-artifacts/email-<kind>-<width>.png for a person to look at.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { REALISTIC, sampleEmails, type EmailKind } from '../fixtures/emails.js';
import { artifactPath, assertPageFitsAndIsAccessible, launchChromium } from './helpers.js';

const emails = sampleEmails(REALISTIC);
const WIDTHS = [600, 375];

describe('the emails in Chromium', () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  before(async () => (browser = await launchChromium()));
  after(() => browser?.close());

  for (const width of WIDTHS) {
    test(`at ${width} px every email fits, passes axe-core, and is kept as a screenshot`, async () => {
      const page = await browser.context.newPage();
      // A short viewport: the full-page screenshot is then as tall as the email, not the window.
      await page.setViewportSize({ width, height: 200 });
      // Nothing may load from anywhere: an email that fetches something would be a tracking pixel.
      const requests: string[] = [];
      page.on('request', (r) => void (r.url().startsWith('data:') || requests.push(r.url())));
      try {
        for (const kind of Object.keys(emails) as EmailKind[]) {
          await page.setContent(emails[kind].html, { waitUntil: 'load' });
          await assertPageFitsAndIsAccessible(page, `email ${kind}`, width);
          await page.screenshot({ path: artifactPath(`email-${kind}-${width}.png`), fullPage: true });
        }
        assert.deepEqual(requests, []);
      } finally {
        await page.close();
      }
    });
  }
});
