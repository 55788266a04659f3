import { and, asc, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { preparedPer } from '../../db/prepared.js';
import { engineDocuments, engineRecipients, envelopeRecipients, envelopes } from '../../db/schema/index.js';
import { STATUS_RECIPIENT, type DocumentStatusRow } from './local-engine.repo.js';

type Copy = { envelope: typeof envelopes.$inferSelect; recipients: (typeof envelopeRecipients.$inferSelect)[] };

/**
 * The live status read in one statement: the envelope (scoped by its owner inside the query), its
 * stored recipients by position, and its document's status with each engine recipient beside the stored
 * recipient that names it. Every row also counts the document's engine recipients, so that one no stored
 * recipient names (none is ever made) shows as missing rather than silently left out of the status.
 */
const copyWithDocumentStmt = preparedPer((db) =>
  db
    .select({
      envelope: envelopes,
      recipient: envelopeRecipients,
      document: { status: engineDocuments.status, completedAt: engineDocuments.completedAt },
      engineRecipient: { ...STATUS_RECIPIENT, position: engineRecipients.position },
      engineRecipients: sql<number>`(SELECT count(*) FROM engine_recipients c WHERE c.document_id = ${engineDocuments.id})`.mapWith(Number),
    })
    .from(envelopes)
    // The local engine's envelope id is its document's uuid.
    .leftJoin(engineDocuments, eq(engineDocuments.id, sql`${envelopes.engineEnvelopeId}::uuid`))
    .leftJoin(envelopeRecipients, eq(envelopeRecipients.envelopeId, envelopes.id))
    .leftJoin(engineRecipients, and(eq(engineRecipients.documentId, engineDocuments.id), eq(sql`${engineRecipients.id}::text`, envelopeRecipients.engineRecipientId)))
    .where(and(eq(envelopes.id, sql.placeholder('id')), eq(envelopes.customerId, sql.placeholder('customerId')), eq(envelopes.mode, sql.placeholder('mode'))))
    .orderBy(asc(envelopeRecipients.position))
    .prepare('envelope_copy_with_document'),
);

/**
 * Undefined when the owner has no such envelope; `document` undefined when the engine has no such
 * document, 'incomplete' when an engine recipient was left out (the caller reads the document alone).
 */
export async function copyWithDocument(
  db: DbOrTx,
  id: string,
  owner: { customerId: string; mode: 'live' | 'test' },
): Promise<(Copy & { document: DocumentStatusRow | 'incomplete' | undefined }) | undefined> {
  const rows = await copyWithDocumentStmt(db).execute({ id, customerId: owner.customerId, mode: owner.mode });
  if (rows.length === 0) return undefined;
  const [first] = rows;
  const copy = { envelope: first.envelope, recipients: rows.flatMap((r) => (r.recipient ? [r.recipient] : [])) };
  if (!first.document) return { ...copy, document: undefined };
  const byId = new Map(rows.flatMap((r) => (r.engineRecipient ? [[r.engineRecipient.id, r.engineRecipient] as const] : [])));
  if (byId.size !== first.engineRecipients) return { ...copy, document: 'incomplete' };
  // By position, as documentStatus orders them.
  const recipients = [...byId.values()].sort((a, b) => a.position - b.position).map(({ position: _position, ...r }) => r);
  return { ...copy, document: { ...first.document, recipients } };
}
