import { and, count, eq, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client.js';
import { engineHandovers } from '../../db/schema/index.js';
import { AppError } from '../../errors.js';
import { enqueueStatement } from '../../jobs/queue.js';
import { t } from '../../i18n/catalogue.js';
import { DEFAULT_LOCALE } from '../../i18n/locales.js';
import type { HandoverInput } from '../engine.js';
import type { DocumentRow, LocalEngineRepo, RecipientRow } from './local-engine.repo.js';
import { actionOf, type Notifier } from './notifications.js';
import type { TokenDeriver } from './tokens.js';
import { currentTurn } from './turns.js';

export type HandoverRow = typeof engineHandovers.$inferSelect;

/**
 * The bounds of hand-overs on a sent document: per recipient's place, 5 replacements by the sender
 * and 3 delegations (a chain of people passing it on), and 50 in all per document. Each one is an
 * email to a new address and a new link, so a free key or a link holder cannot turn one envelope
 * into a mailing list. Edits of a DRAFT are not hand-overs and are not counted.
 */
export const HANDOVER_LIMITS = { sender: 5, recipient: 3, document: 50 } as const;

/** The hand-over rows' queries (the local engine's own table). */
export function createHandoversRepo() {
  return {
    async counts(tx: DbOrTx, documentId: string, recipientId: number): Promise<{ sender: number; recipient: number; document: number }> {
      const [row] = await tx
        .select({
          document: count(),
          sender: sql<number>`count(*) filter (where ${engineHandovers.recipientId} = ${recipientId} and ${engineHandovers.by} = 'sender')`.mapWith(Number),
          recipient: sql<number>`count(*) filter (where ${engineHandovers.recipientId} = ${recipientId} and ${engineHandovers.by} = 'recipient')`.mapWith(Number),
        })
        .from(engineHandovers)
        .where(eq(engineHandovers.documentId, documentId));
      return row;
    },
    async insert(tx: DbOrTx, row: typeof engineHandovers.$inferInsert): Promise<void> {
      await tx.insert(engineHandovers).values(row);
    },
    /** The hand-over a delegator's old link belongs to (indexed; unique). */
    async byOldTokenHash(tx: DbOrTx, tokenHash: string): Promise<HandoverRow | undefined> {
      const [row] = await tx.select().from(engineHandovers).where(eq(engineHandovers.oldTokenHash, tokenHash)).limit(1);
      return row;
    },
    async ofDocument(tx: DbOrTx, documentId: string): Promise<HandoverRow[]> {
      return tx.select().from(engineHandovers).where(and(eq(engineHandovers.documentId, documentId))).orderBy(engineHandovers.id);
    },
  };
}

export type HandoversRepo = ReturnType<typeof createHandoversRepo>;

/** What a recipient's place is reset to for its new person: nothing seen, agreed, verified or sent yet. */
const FRESH_PLACE = {
  legacyTokenHash: null,
  readStatus: 'NOT_OPENED',
  sendStatus: 'NOT_SENT',
  notifiedAt: null,
  viewedAt: null,
  ip: null,
  userAgent: null,
  verifiedAt: null,
  consentedAt: null,
  consentIp: null,
  consentUserAgent: null,
  consentTextSha256: null,
  timeZone: null,
  locale: null,
} as const;

/**
 * The local engine's replaceRecipient (engine.ts): the recipient row keeps its id, so its fields (which
 * name it by id) and its place in the signing order follow; the person, the link and everything the
 * old person did before acting (view, consent, email code) are replaced. `doc` is locked by the caller.
 */
export function createRecipientReplacement(deps: { repo: LocalEngineRepo; handovers: HandoversRepo; tokens: TokenDeriver; notifier: Notifier; linkOf: (r: { linkSalt: string }) => string }) {
  const { repo, handovers, tokens } = deps;
  return async function replace(tx: Tx, doc: DocumentRow, engineRecipientId: string, to: HandoverInput) {
    const recipients = await repo.recipients(tx, doc.id);
    const me = recipients.find((r) => String(r.id) === engineRecipientId);
    if (!me) throw new AppError('RECIPIENT_NOT_FOUND', 'No such recipient on this envelope');
    if (me.status !== 'PENDING') throw new AppError('ALREADY_ACTED', `${me.email} has already ${me.status === 'REJECTED' ? 'declined' : 'acted'}: their place cannot be handed to someone else`);
    if (recipients.some((r) => r.id !== me.id && r.email.toLowerCase() === to.email.toLowerCase())) {
      throw new AppError('RECIPIENT_EMAIL_TAKEN', `${to.email} is already a recipient of this envelope`);
    }
    const draft = doc.status === 'DRAFT';
    if (!draft) {
      const past = await handovers.counts(tx, doc.id, me.id);
      const limit = HANDOVER_LIMITS[to.by];
      if (past[to.by] >= limit) throw new AppError('HANDOVER_LIMIT_REACHED', `This recipient's place was ${to.by === 'sender' ? 'reassigned' : 'delegated'} ${past[to.by]} times already, the most allowed`);
      if (past.document >= HANDOVER_LIMITS.document) throw new AppError('HANDOVER_LIMIT_REACHED', `This envelope had ${past.document} hand-overs already, the most allowed`);
    }
    const linkSalt = tokens.newSalt();
    await repo.updateRecipient(tx, me.id, { ...FRESH_PLACE, email: to.email, name: to.name, linkSalt, tokenHash: tokens.hash(tokens.token(linkSalt)) });
    if (!draft) {
      await handovers.insert(tx, {
        documentId: doc.id,
        recipientId: me.id,
        fromName: me.name,
        fromEmail: me.email,
        toName: to.name,
        toEmail: to.email,
        by: to.by,
        reason: to.reason ?? null,
        // Only a delegator is told, on their old link, that it was handed on: a replaced person learns nothing.
        oldTokenHash: to.by === 'recipient' ? me.tokenHash : null,
      });
      await repo.insertEvent(tx, { documentId: doc.id, recipientId: me.id, event: to.by === 'sender' ? 'REASSIGNED' : 'DELEGATED', ip: to.client?.ip ?? null, userAgent: to.client?.userAgent ?? null });
    }
    // Invited now when it is their turn on a document already out (a PENDING one's distribution invites
    // them; a DRAFT's send does); a VIEWER was invited at the send, so their replacement is too.
    const after = recipients.map((r) => (r.id === me.id ? { ...r, email: to.email, name: to.name, notifiedAt: null } : r));
    const out = doc.status === 'SENT' || doc.status === 'PARTIALLY_SIGNED';
    const embedded = (doc.meta as { delivery?: string }).delivery === 'embedded';
    const invited = out && !embedded && (me.role === 'VIEWER' || currentTurn(after).some((r) => r.id === me.id));
    const link = deps.linkOf({ linkSalt });
    if (invited) {
      // The delegate is told who passed it on (the sender's own message follows).
      const note = to.by === 'recipient' ? t(DEFAULT_LOCALE, 'email-delegation.forwardedBy', { name: me.name, email: me.email }) : null;
      const mailDoc = note ? { ...doc, meta: { ...doc.meta, message: doc.meta.message ? `${note}\n\n${doc.meta.message}` : note } } : doc;
      const jobs = deps.notifier.invitations(mailDoc, [{ name: to.name, email: to.email, link, action: actionOf(me.role) }]);
      await repo.together(tx, [enqueueStatement(jobs), repo.notifiedStatement([me.id])]);
    }
    return { signingUrl: link, invited, from: { name: me.name, email: me.email } };
  };
}

/** The hand-overs of a document as the certificate prints them. */
export const handoversForCertificate = (rows: HandoverRow[]) =>
  rows.map((h) => ({ at: h.at.toISOString(), by: h.by, from: { name: h.fromName, email: h.fromEmail }, to: { name: h.toName, email: h.toEmail }, reason: h.reason }));

export type { RecipientRow };
