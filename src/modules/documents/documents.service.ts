import type { KeyObject } from 'node:crypto';
import type { DbOrTx } from '../../db/client.js';
import type { SealedDocument, SealedDocumentsRepo } from '../../engine/local/sealed-documents.repo.js';
import { AppError } from '../../errors.js';
import { sealEvidence } from '../../pdf/seal-evidence.js';
import { checkSealSignature, type SealSignatureCheck } from '../../pdf/seal-signature.js';
import { findSignedRanges, hasPdfHeader, prefixHashes, signedContentSha256, type SignedRange } from '../../pdf/signed-revisions.js';
import type { TDocumentVerification, TSealedEnvelope } from './documents.schemas.js';

export type DocumentsServiceDeps = {
  sealed: Pick<SealedDocumentsRepo, 'findByHashes' | 'findBySignedContent'>;
  /** The id the customer knows the envelope by (the one printed on the certificate). */
  envelopeIdOf: (tx: DbOrTx, engineDocumentId: string) => Promise<string | undefined>;
  /** The sealing certificate's public key; asked for only when the file carries a signature. */
  sealingKey: () => Promise<KeyObject>;
};

/**
 * Was this PDF sealed by us, and is it unchanged? Answered from the bytes alone, and nothing of them
 * is stored. The record of a seal is the SHA-256 of the sealed file as served, and of what its
 * signature covers (both stored at sealing):
 * - the whole file has a sealed file's hash → SEALED;
 * - one of its signed revisions (the prefix [0, end) a /ByteRange ends at) has one → MODIFIED, content
 *   was appended after sealing (an incremental update; the signed revision is exactly what we served);
 * - neither, but a signature verifies under our sealing key and is intact: what it covers may still be
 *   a seal's content, with bytes the signature does not cover changed (the CMS's certificates and
 *   padding are unsigned) → SEALED if it covers the whole file, MODIFIED if content was appended;
 * - a signature of ours matching no record, or no longer matching what it covers → MODIFIED, with no
 *   envelope: a SEALED answer always names its envelope (and so whether it was a test send);
 * - otherwise NOT_SEALED.
 * The envelope is described only to a caller holding its sealed content: the file, a revision of it,
 * or what its seal signs.
 */
export function createDocumentsService(deps: DocumentsServiceDeps) {
  async function envelopeOf(tx: DbOrTx, doc: SealedDocument): Promise<TSealedEnvelope> {
    return {
      envelopeId: (await deps.envelopeIdOf(tx, doc.documentId)) ?? doc.documentId,
      title: doc.title,
      completedAt: doc.completedAt.toISOString(),
      testMode: doc.testSend,
      signers: doc.signers.map((s) => ({ name: s.name, role: s.role as 'SIGNER' | 'APPROVER', signedAt: s.signedAt?.toISOString() ?? null })),
    };
  }

  /** The latest signature that verifies under our key, with its range; undefined when none does. */
  async function ourSignature(bytes: Uint8Array, ranges: SignedRange[]): Promise<{ range: SignedRange; check: SealSignatureCheck } | undefined> {
    if (ranges.length === 0) return undefined;
    const key = await deps.sealingKey();
    for (const range of ranges) {
      const check = checkSealSignature(bytes, range, key);
      if (check) return { range, check };
    }
    return undefined;
  }

  return {
    async verify(tx: DbOrTx, bytes: Uint8Array): Promise<TDocumentVerification> {
      if (!hasPdfHeader(bytes)) throw new AppError('INVALID_PDF', 'The file is not a PDF (no %PDF- header)');
      const ranges = findSignedRanges(bytes);
      const { whole, prefixes } = prefixHashes(bytes, ranges.map((r) => r.end));
      const records = await deps.sealed.findByHashes(tx, [whole, ...prefixes.values()]);
      const byHash = new Map(records.map((d) => [d.sealedSha256, d]));
      const exact = byHash.get(whole);
      // Ranges come last first: the latest signed revision we sealed.
      const revisionRange = exact ? undefined : ranges.find((r) => byHash.has(prefixes.get(r.end) ?? ''));
      const revision = revisionRange && byHash.get(prefixes.get(revisionRange.end)!);
      const ours = await ourSignature(bytes, ranges);
      const signature = ours && { intact: ours.check.intact, coversWholeFile: ours.range.end === bytes.length, signedAt: ours.check.signedAt };
      // Only for a signature of ours: another installation's file is NOT_SEALED and nothing of it is read further.
      // What follows the signature (DSS, document timestamps) counts only within a file this server recorded:
      // anything appended since is anyone's, and must not raise the level the answer reports.
      const knownEnd = exact ? bytes.length : (revisionRange?.end ?? ours?.range.end ?? 0);
      const evidence = ours ? sealEvidence(bytes, ours, ranges, knownEnd) : null;
      const base = { sha256: whole, signature: signature ?? null, evidence };

      if (exact) {
        const envelope = await envelopeOf(tx, exact);
        return { ...base, status: 'SEALED', sealedByThisServer: true, unchanged: true, envelope, summary: `Sealed by this server on ${day(envelope.completedAt)} and unchanged since.` };
      }
      if (revision) {
        const envelope = await envelopeOf(tx, revision);
        return { ...base, status: 'MODIFIED', sealedByThisServer: true, unchanged: false, envelope, summary: `Sealed by this server on ${day(envelope.completedAt)}, but changed since: content was added after sealing.` };
      }
      const signedAs = ours && signature?.intact ? await deps.sealed.findBySignedContent(tx, signedContentSha256(bytes, ours.range)) : undefined;
      if (signedAs) {
        const envelope = await envelopeOf(tx, signedAs);
        const sealedOn = `Sealed by this server on ${day(envelope.completedAt)}`;
        if (signature!.coversWholeFile) {
          return { ...base, status: 'SEALED', sealedByThisServer: true, unchanged: true, envelope, summary: `${sealedOn}; what its signature covers is unchanged since, though bytes it does not cover differ from the copy this server served.` };
        }
        return { ...base, status: 'MODIFIED', sealedByThisServer: true, unchanged: false, envelope, summary: `${sealedOn}, but changed since: content was added after sealing.` };
      }
      if (signature?.intact && signature.coversWholeFile) {
        return { ...base, status: 'MODIFIED', sealedByThisServer: true, unchanged: false, envelope: null, summary: "Signed with this server's certificate and intact where the signature covers it, but this server holds no record of this file nor of what it signs, so it cannot name the envelope: not the file it sealed." };
      }
      if (signature) {
        const what = signature.intact ? 'content was added after sealing' : 'the sealed content was altered, so the seal no longer matches it';
        return { ...base, status: 'MODIFIED', sealedByThisServer: true, unchanged: false, envelope: null, summary: `Sealed with this server's certificate, but changed since: ${what}.` };
      }
      return { ...base, status: 'NOT_SEALED', sealedByThisServer: false, unchanged: false, envelope: null, summary: 'Not sealed by this server: it matches no document this server sealed and carries no signature of its sealing certificate.' };
    },
  };
}

const day = (iso: string) => iso.slice(0, 10);

export type DocumentsService = ReturnType<typeof createDocumentsService>;
