import type { DbOrTx, Tx } from '../../db/client.js';
import { TERMINAL_STATUSES, type EnvelopeStatus, type SigningEngine } from '../../engine/engine.js';
import type { PeriodicTask } from '../../jobs/worker.js';
import type { AuditService } from '../audit/audit.service.js';
import type { EnvelopeSync, PublishedEvent } from './envelope-sync.js';
import type { EnvelopesRepo } from './envelopes.repo.js';
import { OPT_IN_EVENT_NAMES } from './events.js';

/** Documents looked at per scheduler tick; the rest wait for the next one. */
const BATCH = 100;

export type EnvelopeRemindersDeps = {
  repo: Pick<EnvelopesRepo, 'findByEngineId' | 'recordSync'>;
  engine: Pick<SigningEngine, 'dueReminders' | 'sendDueReminders'>;
  sync: Pick<EnvelopeSync, 'toDto'>;
  audit: Pick<AuditService, 'alert'>;
  /** The account's default language, for recipients with none of their own. */
  defaultLocaleOf: (tx: DbOrTx, customerId: string) => Promise<string | null>;
  /** Called in the transaction that records the events (webhook fan-out: envelope.reminder_sent to registrations that name it). */
  publish?: (tx: Tx, e: PublishedEvent) => Promise<void>;
};

/**
 * Automatic reminders and expiry warnings (issue 37). A periodic task, run on one node at a time per
 * interval, asks the engine which documents have one due; each envelope is locked (skipped while a
 * state change holds it: the next tick comes back) and, in a savepoint, the engine claims and emails
 * what is due, and the envelope's events (RECIPIENT_REMINDED, RECIPIENT_EXPIRY_WARNED) and their
 * opt-in webhook commit with the claims. The engine's claims are conditional updates: a second run,
 * another node's, or a crash and a rerun never sends one twice. An engine without automatic reminders
 * (Documenso) has nothing due.
 */
export function createEnvelopeReminders(deps: EnvelopeRemindersDeps) {
  const { engine, repo } = deps;
  const alerted = new Set<string>();

  async function remindDue(tx: Tx, limit = BATCH): Promise<number> {
    if (!engine.dueReminders || !engine.sendDueReminders) return 0;
    let sent = 0;
    for (const engineEnvelopeId of await engine.dueReminders(tx, limit)) {
      const envelope = await repo.findByEngineId(tx, engineEnvelopeId, 'skip');
      if (!envelope || TERMINAL_STATUSES.includes(envelope.status as EnvelopeStatus)) continue;
      try {
        sent += await tx.transaction(async (sp) => {
          const reminded = await engine.sendDueReminders!(sp, engineEnvelopeId, { defaultLocale: await deps.defaultLocaleOf(sp, envelope.customerId) });
          if (reminded.length === 0) return 0;
          const events = reminded.map((r) => ({ eventType: r.kind === 'reminder' ? 'RECIPIENT_REMINDED' : 'RECIPIENT_EXPIRY_WARNED', recipientEmail: r.email }));
          const inserted = await repo.recordSync(sp, envelope.id, { updates: [], events });
          if (deps.publish) {
            let dto: ReturnType<typeof deps.sync.toDto> | undefined;
            for (const [i, ev] of inserted.entries()) {
              const r = reminded[i];
              await deps.publish(sp, {
                owner: { customerId: envelope.customerId, mode: envelope.mode },
                envelopeId: envelope.id,
                eventId: ev.id,
                event: OPT_IN_EVENT_NAMES.RECIPIENT_REMINDED,
                occurredAt: ev.occurredAt,
                payload: async () => {
                  const [envelopeNow] = await (dto ??= deps.sync.toDto(sp, [envelope], false));
                  return {
                    envelope: envelopeNow,
                    recipient: envelopeNow.recipients.find((x) => x.email === r.email) ?? null,
                    data: { reminder: { kind: r.kind, recipientEmail: r.email, recipientName: r.name } },
                  };
                },
              });
            }
          }
          return reminded.length;
        });
      } catch (err) {
        // One envelope that fails is rolled back alone and alerted once per process; the sweep goes on.
        if (alerted.has(envelope.id)) continue;
        alerted.add(envelope.id);
        await deps.audit.alert(tx, {
          kind: 'envelope_reminders_failed',
          message: `The reminder sweep skipped envelope ${envelope.id}: ${(err instanceof Error ? err.message : String(err)).slice(0, 300)}`,
          customerId: envelope.customerId,
          resourceType: 'envelope',
          resourceId: envelope.id,
        });
      }
    }
    return sent;
  }

  return {
    /** Sends what is due now, at most `limit` documents' worth; answers how many reminders and warnings were sent. */
    remindDue,
    periodic: [{ name: 'envelope-reminders', run: async (tx) => void (await remindDue(tx)) }] satisfies PeriodicTask[],
  };
}

export type EnvelopeReminders = ReturnType<typeof createEnvelopeReminders>;
