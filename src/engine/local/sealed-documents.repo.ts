import { and, asc, eq, inArray, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { engineDocuments, engineRecipients, sealedDocumentVersions } from '../../db/schema/index.js';

export type SealedDocument = {
  documentId: string;
  /** The hash it was found by: SHA-256 of the sealed PDF exactly as stored and served. */
  sealedSha256: string;
  title: string | null;
  completedAt: Date;
  testSend: boolean;
  /** Those who signed or approved, in recipient order; viewers and CCs sign nothing. */
  signers: { name: string; role: string; signedAt: Date | null }[];
};

/** The built-in engine's sealed documents, found by the SHA-256 of the file it served (/verify-document). */
export function createSealedDocumentsRepo() {
  /**
   * The completed documents `which` selects. Unscoped by customer on purpose: the hash of a sealed
   * file (or of what its seal signs) is known only to whoever holds the file, and the answer (title,
   * signers, when) is what that file's own certificate page already shows.
   */
  async function find(tx: DbOrTx, which: SQL): Promise<SealedDocument[]> {
    const docs = await tx
      .select({ id: engineDocuments.id, sealedSha256: engineDocuments.sealedSha256, title: engineDocuments.title, completedAt: engineDocuments.completedAt, testSend: engineDocuments.testSend })
      .from(engineDocuments)
      .where(and(which, eq(engineDocuments.status, 'COMPLETED')));
    if (docs.length === 0) return [];
    const recipients = await tx
      .select({ documentId: engineRecipients.documentId, name: engineRecipients.name, role: engineRecipients.role, signedAt: engineRecipients.signedAt })
      .from(engineRecipients)
      .where(and(inArray(engineRecipients.documentId, docs.map((d) => d.id)), inArray(engineRecipients.role, ['SIGNER', 'APPROVER'])))
      .orderBy(asc(engineRecipients.position));
    return docs.map((d) => ({
      documentId: d.id,
      sealedSha256: d.sealedSha256!,
      title: d.title,
      completedAt: d.completedAt ?? new Date(0),
      testSend: d.testSend,
      signers: recipients.filter((r) => r.documentId === d.id).map(({ name, role, signedAt }) => ({ name, role, signedAt })),
    }));
  }

  return {
    /**
     * The completed documents whose sealed file has one of these hashes: the current file, or an
     * earlier version an archival re-timestamp replaced (then `sealedSha256` is that version's hash).
     */
    async findByHashes(tx: DbOrTx, hashes: string[]): Promise<SealedDocument[]> {
      if (hashes.length === 0) return [];
      const current = await find(tx, inArray(engineDocuments.sealedSha256, hashes));
      const earlier = await tx.select({ documentId: sealedDocumentVersions.documentId, sealedSha256: sealedDocumentVersions.sealedSha256 }).from(sealedDocumentVersions).where(inArray(sealedDocumentVersions.sealedSha256, hashes)).limit(16);
      if (earlier.length === 0) return current;
      const docs = await find(tx, inArray(engineDocuments.id, [...new Set(earlier.map((v) => v.documentId))]));
      return [...current, ...earlier.flatMap((v) => docs.filter((d) => d.documentId === v.documentId).map((d) => ({ ...d, sealedSha256: v.sealedSha256 })))];
    },

    /** The completed document whose seal signs exactly this content (signedContentSha256 of its range). */
    async findBySignedContent(tx: DbOrTx, hash: string): Promise<SealedDocument | undefined> {
      return (await find(tx, eq(engineDocuments.signedContentSha256, hash)))[0];
    },
  };
}

export type SealedDocumentsRepo = ReturnType<typeof createSealedDocumentsRepo>;
