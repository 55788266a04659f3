import { sql } from 'drizzle-orm';
import { rowsOf, type Tx } from '../../db/client.js';
import { resolveLocale } from '../../i18n/locales.js';
import { enqueue } from '../../jobs/queue.js';
import type { SentReminder } from '../engine.js';
import type { LocalEngineRepo } from './local-engine.repo.js';
import { actionOf, type Notifier } from './notifications.js';
import { currentTurn } from './turns.js';

/*
 * The conditions, in SQL so that the claim re-checks them under the row's lock: `d` is the document,
 * `r` one of its recipients. The first three are the partial index's (engine_documents_reminding_idx).
 */
const REMINDING = sql`d.status IN ('SENT', 'PARTIALLY_SIGNED') AND (d.meta ? 'reminders' OR d.meta ? 'expiryWarningDays')`;
/** Whoever must still act and was invited (their turn came), while the window is open and mail is the delivery. */
const WAITING = sql`r.status = 'PENDING' AND r.role IN ('SIGNER', 'APPROVER') AND r.notified_at IS NOT NULL
  AND d.expires_at > now() AND d.purged_at IS NULL AND coalesce(d.meta->>'delivery', 'email') <> 'embedded'`;
/** The first reminder `firstAfterDays` after the invitation (a manual resend counts as one), then every `everyDays`, `max` in all. */
const REMINDER_DUE = sql`(d.meta ? 'reminders') AND r.reminders_sent < (d.meta->'reminders'->>'max')::int
  AND greatest(r.notified_at, r.last_reminded_at)
    + make_interval(days => CASE WHEN r.reminders_sent = 0 THEN (d.meta->'reminders'->>'firstAfterDays')::int ELSE (d.meta->'reminders'->>'everyDays')::int END) <= now()`;
const WARN_AT = sql`(d.expires_at - make_interval(days => (d.meta->>'expiryWarningDays')::int))`;
/** Once, from `expiryWarningDays` before the end; not to whoever was invited after that point (their invitation gave the deadline). */
const WARNING_DUE = sql`(d.meta ? 'expiryWarningDays') AND r.expiry_warned_at IS NULL AND ${WARN_AT} <= now() AND r.notified_at < ${WARN_AT}`;

const idList = (ids: number[]) => sql`(SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::bigint)`;

/**
 * Automatic reminders and expiry warnings of the built-in engine. A periodic task (the envelope
 * module's) asks which documents have one due, locks each envelope and lets sendDueReminders claim
 * them: each claim is one conditional UPDATE (a count compared and set, a time that moves), so a
 * second run, a run racing it on another node, or a retry finds nothing due and sends nothing twice;
 * the email jobs and the engine's own events are written in the same transaction.
 */
export function createLocalReminders(deps: { repo: Pick<LocalEngineRepo, 'document' | 'recipients' | 'insertEvent'>; notifier: Pick<Notifier, 'automaticReminder'>; linksOf: (tx: Tx, engineRecipientIds: string[]) => Promise<Map<string, string>> }) {
  return {
    async dueReminders(tx: Tx, limit: number): Promise<string[]> {
      const rows = rowsOf<{ id: string }>(
        await tx.execute(sql`SELECT d.id FROM engine_documents d
          WHERE ${REMINDING} AND EXISTS (SELECT 1 FROM engine_recipients r WHERE r.document_id = d.id AND ${WAITING} AND ((${REMINDER_DUE}) OR (${WARNING_DUE})))
          ORDER BY d.expires_at LIMIT ${limit}`),
      );
      return rows.map((r) => r.id);
    },

    async sendDueReminders(tx: Tx, documentId: string, opts: { defaultLocale: string | null }): Promise<SentReminder[]> {
      const doc = await deps.repo.document(tx, documentId, true);
      if (!doc || !['SENT', 'PARTIALLY_SIGNED'].includes(doc.status)) return [];
      const turn = currentTurn(await deps.repo.recipients(tx, doc.id));
      if (turn.length === 0) return [];
      const claim = async (set: ReturnType<typeof sql>, due: ReturnType<typeof sql>, ids: number[]) =>
        ids.length === 0
          ? []
          : rowsOf<{ id: number | string }>(
              await tx.execute(sql`UPDATE engine_recipients r SET ${set} FROM engine_documents d
                WHERE d.id = r.document_id AND d.id = ${doc.id} AND r.id IN ${idList(ids)} AND ${REMINDING} AND ${WAITING} AND ${due}
                RETURNING r.id`),
            ).map((r) => Number(r.id));
      // The warning first: whoever gets it now is not also reminded now (and the next reminder counts from it).
      const warned = await claim(sql`expiry_warned_at = now(), last_reminded_at = now()`, WARNING_DUE, turn.map((r) => r.id));
      const reminded = await claim(sql`reminders_sent = r.reminders_sent + 1, last_reminded_at = now()`, REMINDER_DUE, turn.map((r) => r.id).filter((id) => !warned.includes(id)));
      const sent = [...warned.map((id) => ({ id, kind: 'expiry_warning' as const })), ...reminded.map((id) => ({ id, kind: 'reminder' as const }))];
      const byId = new Map(turn.map((r) => [r.id, r]));
      // Through linksOf: a recipient migrated from the old links gets its token hash stored first.
      const links = await deps.linksOf(tx, sent.map((s) => String(s.id)));
      const jobs = [];
      for (const { id, kind } of sent) {
        const r = byId.get(id)!;
        const who = { name: r.name, email: r.email, action: actionOf(r.role) as 'sign' | 'approve', locale: resolveLocale(r.locale, opts.defaultLocale), timeZone: r.timeZone };
        jobs.push(deps.notifier.automaticReminder(doc, who, links.get(String(r.id))!, kind));
        await deps.repo.insertEvent(tx, { documentId: doc.id, recipientId: r.id, event: kind === 'reminder' ? 'REMINDER_SENT' : 'EXPIRY_WARNING_SENT' });
      }
      await enqueue(tx, jobs);
      return sent.map(({ id, kind }) => ({ engineRecipientId: String(id), email: byId.get(id)!.email, name: byId.get(id)!.name, kind }));
    },
  };
}
