import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { preparedPer } from '../../db/prepared.js';
import { engineDocuments, envelopeRecipients, envelopes } from '../../db/schema/index.js';
import type { CopyWithStatus } from '../engine.js';
import type { DocumentStatusRow } from './local-engine.repo.js';

type StoredRecipient = typeof envelopeRecipients.$inferSelect;
type EngineRecipient = DocumentStatusRow['recipients'][number] & { position: number };
type Copy = { envelope: CopyWithStatus['envelope']; recipients: StoredRecipient[] };

/**
 * Each stored recipient beside the engine recipient that names it, as one JSON array per pair in
 * position order, in the order `pairOf` reads them. One row and a dozen columns instead of a row per
 * recipient with every column of both: the driver's and drizzle's work grows with rows times columns,
 * and was most of a status read's cost in the process. A timestamp comes as ISO 8601 with its offset.
 */
const PAIRS = sql`(SELECT json_agg(json_build_array(
    r.id, r.envelope_id, r.position, r.email, r.name, r.role, r.signing_order, r.engine_recipient_id,
    r.signing_status, r.read_status, r.send_status, r.status, r.signed_at, r.viewed_at, r.rejected_at,
    r.rejection_reason, r.consented_at, r.verification_required, r.locale,
    er.id, er.email, er.role, er.status, er.read_status, er.send_status, er.viewed_at, er.signed_at,
    er.rejected_at, er.rejection_reason, er.consented_at, er.link_salt, er.token_hash, er.position) ORDER BY r.position)
  FROM envelope_recipients r
  LEFT JOIN engine_recipients er ON er.document_id = ${engineDocuments.id} AND er.id::text = r.engine_recipient_id
  WHERE r.envelope_id = ${envelopes.id})`;

type Json = string | number | boolean | null;
const date = (v: Json) => (v === null ? null : new Date(v as string));

/** One pair of PAIRS: the stored recipient, and the engine's (undefined when none names it). */
function pairOf(a: Json[]): { recipient: StoredRecipient; engine: EngineRecipient | undefined } {
  const recipient: StoredRecipient = {
    id: a[0] as number,
    envelopeId: a[1] as string,
    position: a[2] as number,
    email: a[3] as string,
    name: a[4] as string,
    role: a[5] as string,
    signingOrder: a[6] as number | null,
    engineRecipientId: a[7] as string,
    signingStatus: a[8] as string,
    readStatus: a[9] as string,
    sendStatus: a[10] as string,
    status: a[11] as string,
    signedAt: date(a[12]),
    viewedAt: date(a[13]),
    rejectedAt: date(a[14]),
    rejectionReason: a[15] as string | null,
    consentedAt: date(a[16]),
    verificationRequired: a[17] as boolean,
    locale: a[18] as string | null,
  };
  if (a[19] === null) return { recipient, engine: undefined };
  const engine: EngineRecipient = {
    id: a[19] as number,
    email: a[20] as string,
    role: a[21] as string,
    status: a[22] as string,
    readStatus: a[23] as string,
    sendStatus: a[24] as string,
    viewedAt: date(a[25]),
    signedAt: date(a[26]),
    rejectedAt: date(a[27]),
    rejectionReason: a[28] as string | null,
    consentedAt: date(a[29]),
    linkSalt: a[30] as string,
    tokenHash: a[31] as string | null,
    position: a[32] as number,
  };
  return { recipient, engine };
}

/**
 * The live status read in one statement: the envelope (scoped by its owner inside the query), its
 * stored recipients by position, and its document's status with each engine recipient beside the stored
 * recipient that names it. The row also counts the document's engine recipients, so that one no stored
 * recipient names (none is ever made) shows as missing rather than silently left out of the status.
 */
const copyWithDocumentStmt = preparedPer((db) =>
  db
    .select({
      // Only what the answer and the comparison use of the envelope.
      envelope: { id: envelopes.id, engineEnvelopeId: envelopes.engineEnvelopeId, status: envelopes.status, title: envelopes.title, createdAt: envelopes.createdAt, completedAt: envelopes.completedAt },
      document: { status: engineDocuments.status, completedAt: engineDocuments.completedAt },
      engineRecipients: sql<number>`(SELECT count(*) FROM engine_recipients c WHERE c.document_id = ${engineDocuments.id})`.mapWith(Number),
      pairs: sql<Json[][] | null>`${PAIRS}`,
    })
    .from(envelopes)
    // The local engine's envelope id is its document's uuid.
    .leftJoin(engineDocuments, eq(engineDocuments.id, sql`${envelopes.engineEnvelopeId}::uuid`))
    .where(and(eq(envelopes.id, sql.placeholder('id')), eq(envelopes.customerId, sql.placeholder('customerId')), eq(envelopes.mode, sql.placeholder('mode'))))
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
  const [row] = await copyWithDocumentStmt(db).execute({ id, customerId: owner.customerId, mode: owner.mode });
  if (!row) return undefined;
  const pairs = (row.pairs ?? []).map(pairOf);
  const copy = { envelope: row.envelope, recipients: pairs.map((p) => p.recipient) };
  if (!row.document) return { ...copy, document: undefined };
  const byId = new Map(pairs.flatMap((p) => (p.engine ? [[p.engine.id, p.engine] as const] : [])));
  if (byId.size !== row.engineRecipients) return { ...copy, document: 'incomplete' };
  // By position, as documentStatus orders them.
  const recipients = [...byId.values()].sort((a, b) => a.position - b.position).map(({ position: _position, ...r }) => r);
  return { ...copy, document: { ...row.document, recipients } };
}
