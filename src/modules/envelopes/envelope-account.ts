import type { ReminderSchedule, SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import { logoFileOf } from '../account/logo.js';
import { DEFAULT_CONSENT_TEXT } from '../signing/consent-text.js';
import type { TCreatePayload } from './envelopes.schemas.js';

/** What a create copies from the sending account onto the document (read before the transaction). */
export type SenderAccount = {
  name: string | null;
  consentText: string | null;
  brandColor?: string | null;
  logoKey?: string | null;
  /** The account's reminder defaults (PATCH /v1/account), for a create that gives none. */
  reminderDefaults?: ReminderSchedule | null;
  expiryWarningDays?: number | null;
  /** The language of recipients without their own (copied onto the document: emails, the certificate). */
  defaultLocale?: string | null;
};

const senderAndConsent = (a: SenderAccount | undefined) => ({ senderName: a?.name ?? null, consentText: a?.consentText ?? DEFAULT_CONSENT_TEXT, brandColor: a?.brandColor ?? null, logo: logoFileOf(a?.logoKey ?? null), defaultLocale: a?.defaultLocale ?? null });

/**
 * The reminders and the expiry warning of a create: the payload's (null: none), else the account's
 * defaults. A schedule of `max: 0` is none. An engine that sends no automatic reminders (Documenso)
 * refuses them when the payload asks; the account's defaults are then not applied (docs/reminders.md).
 */
export function reminderSettings(payload: Pick<TCreatePayload, 'reminders' | 'expiryWarningDays'>, account: SenderAccount | undefined, engine: Pick<SigningEngine, 'sendDueReminders'>) {
  if (!engine.sendDueReminders) {
    const asked = [payload.reminders && payload.reminders.max > 0 && 'reminders', payload.expiryWarningDays && 'expiryWarningDays'].filter(Boolean);
    if (asked.length) throw new AppError('NOT_SUPPORTED_BY_ENGINE', `This server's signing engine (documenso) sends no automatic reminders or expiry warnings: leave out ${asked.join(' and ')}, or remind with POST /v1/envelopes/{id}/resend`);
    return { reminders: null, expiryWarningDays: null };
  }
  const reminders = payload.reminders === undefined ? (account?.reminderDefaults ?? null) : payload.reminders;
  const expiryWarningDays = payload.expiryWarningDays === undefined ? (account?.expiryWarningDays ?? null) : payload.expiryWarningDays;
  return { reminders: reminders && reminders.max > 0 ? reminders : null, expiryWarningDays: expiryWarningDays || null };
}

/** Everything a create takes from the account: sender, consent text, brand, reminders. */
export const accountSettings = (payload: TCreatePayload, account: SenderAccount | undefined, engine: Pick<SigningEngine, 'sendDueReminders'>) => ({
  ...senderAndConsent(account),
  ...reminderSettings(payload, account, engine),
});
