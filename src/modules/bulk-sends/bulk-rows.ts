import type { TemplateRow } from '../templates/templates.repo.js';
import { AppError } from '../../errors.js';
import { checkRecipients } from '../envelopes/envelope-plan.js';
import type { TCreatePayload } from '../envelopes/envelopes.schemas.js';
import { checkPrefill, mapSlots } from '../templates/template-plan.js';
import { ZBulkRow, type TBulkRow } from './bulk-sends.schemas.js';

const DAY = 86_400_000;

export type RowCheck = { ok: true; row: TBulkRow; gated: number } | { ok: false; code: string; message: string };

/**
 * The from-template rules a row must pass before it is queued, none of which needs the document: the
 * body's shape, the slot mapping (mapSlots), the recipients (checkRecipients), the signing window and
 * the retention (as the envelope service's plan), and prefill keys naming fields of the template.
 * The rules that depend on the moment (the balance, the template still there) are checked again
 * when the row is created, and a row that fails them then ends FAILED, uncharged.
 */
export function checkRow(template: Pick<TemplateRow, 'recipients' | 'fields'>, raw: unknown, opts: { envelopeExpiryDays: number; storageExpiryDays: number; now: number }): RowCheck {
  const parsed = ZBulkRow.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue.path.map(String).join('.');
    return { ok: false, code: 'VALIDATION_ERROR', message: path ? `${path}: ${issue.message}` : issue.message };
  }
  const row = parsed.data;
  try {
    const recipients = mapSlots(template.recipients, row.recipients);
    checkRecipients({ recipients } as TCreatePayload);
    const { now } = opts;
    const expiresAt = row.expiresAt ? Date.parse(row.expiresAt) : now + opts.envelopeExpiryDays * DAY;
    if (expiresAt <= now) return { ok: false, code: 'VALIDATION_ERROR', message: 'expiresAt: must be in the future' };
    if (now + (row.storageExpiryDays ?? opts.storageExpiryDays) * DAY <= expiresAt) {
      return { ok: false, code: 'VALIDATION_ERROR', message: 'storageExpiryDays: the document retention must outlast the signing window (expiresAt)' };
    }
    // The from-template create's own check: a TEXT or NUMBER field of the template, within its validation.
    checkPrefill(template, row.prefill);
    return { ok: true, row, gated: recipients.filter((r) => r.verificationRequired).length };
  } catch (err) {
    if (err instanceof AppError) return { ok: false, code: err.code, message: err.message.replace(/^body\./, '') };
    throw err;
  }
}
