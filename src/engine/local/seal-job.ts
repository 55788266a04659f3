import { randomUUID } from 'node:crypto';
import type { Db, Tx } from '../../db/client.js';
import { z } from 'zod';
import { defineJob } from '../../jobs/worker.js';
import { sha256Hex } from '../../lib/crypto.js';
import { timestampHorizon } from '../../pdf/seal-evidence.js';
import { findSignedRanges, signedContentSha256 } from '../../pdf/signed-revisions.js';
import { resolveLocale, type Locale } from '../../i18n/locales.js';
import type { CertificateData, StampField } from '../../pdf/types.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import { SEAL_JOB, documentKey } from './local-engine.js';
import type { LocalEngineRepo } from './local-engine.repo.js';
import type { Notifier } from './notifications.js';
import { createHandoversRepo, handoversForCertificate } from './handovers.js';
import { consentTextFor, DEFAULT_CONSENT_TEXT } from '../../modules/signing/consent-text.js';

const handoversRepo = createHandoversRepo();

function certificateConsent(recorded: string, locale: Locale) {
  const text = consentTextFor(recorded, null, locale);
  return { text, sha256: sha256Hex(text), builtIn: recorded === DEFAULT_CONSENT_TEXT };
}

/** The engine events that are a recipient's own doing, printed under their name on the certificate. */
const RECIPIENT_ACTIONS = new Set(['VIEWED', 'RECIPIENT_VERIFIED', 'CONSENTED', 'SIGNED', 'APPROVED', 'REJECTED']);

export type SealFn = (input: { original: Uint8Array; fields: StampField[]; hide: StampField[] | { page: number; x: number; y: number; width: number; height: number }[]; certificate: CertificateData }) => Promise<Uint8Array>;

/**
 * Seals a document whose signers all signed: values and signature images stamped in, an audit
 * certificate appended, a PAdES signature applied; then the document is COMPLETED and everyone gets
 * the sealed PDF. The heavy work runs outside any transaction; the state change takes the envelope
 * lock (before the engine row, as every other path does) and re-checks the state, so a cancel that
 * won the race is respected and a second run changes nothing.
 */
export function sealJob(deps: {
  db: Db;
  repo: LocalEngineRepo;
  storage: BlobStorage;
  notifier: Notifier;
  seal: SealFn;
  /** The id the customer knows the envelope by, printed on the certificate. */
  envelopeIdOf: (engineEnvelopeId: string) => Promise<string | undefined>;
  /**
   * Locks the row of the envelope that fronts this document, runs `work`, then syncs that envelope
   * (undefined, work not run, when none fronts it): the service's lock is always taken first.
   */
  lockAndSync: <T>(tx: Tx, engineEnvelopeId: string, work: () => Promise<T>) => Promise<{ value: T } | undefined>;
  /** `$PUBLIC_URL/verify-document`, printed on the certificate. */
  verificationUrl?: string;
  /** The job's deadline (the worker's default when unset): the sealing sandbox's own, plus the reads, the timestamp and the writes around it. */
  timeoutMs?: number;
}) {
  const { repo, storage } = deps;
  return defineJob({
    type: SEAL_JOB,
    payload: z.object({ documentId: z.guid() }),
    timeoutMs: deps.timeoutMs,
    async handle({ documentId }) {
      const doc = await repo.document(deps.db, documentId);
      if (!doc || doc.status !== 'SEALING') return;
      const [recipients, fields, events, handovers, attachments] = await Promise.all([repo.recipients(deps.db, doc.id), repo.fields(deps.db, doc.id), repo.events(deps.db, doc.id), handoversRepo.ofDocument(deps.db, doc.id), repo.attachments(deps.db, doc.id)]);
      const original = await storage.get(doc.originalKey);
      if (!original) throw new Error(`original PDF of ${doc.id} is missing`);

      const stamps: StampField[] = [];
      for (const f of fields) {
        const base = { page: f.page, x: f.x, y: f.y, width: f.width, height: f.height, type: f.type as StampField['type'] };
        if (f.value?.startsWith('image:')) {
          const image = await storage.get(f.value.slice('image:'.length));
          if (!image) throw new Error(`signature image of field ${f.id} is missing`);
          stamps.push({ ...base, value: null, image });
        } else stamps.push({ ...base, value: f.value });
      }
      const byId = new Map(recipients.map((r) => [r.id, r]));
      const completedAt = new Date();
      const envelopeId = (await deps.envelopeIdOf(doc.id)) ?? doc.id;
      const certificate: CertificateData = {
        envelopeId,
        title: doc.title,
        documentSha256: doc.sha256,
        completedAt: completedAt.toISOString(),
        recipients: recipients.map((r) => ({
          name: r.name,
          email: r.email,
          role: r.role,
          status: r.status,
          ip: r.ip,
          userAgent: r.userAgent,
          viewedAt: r.viewedAt?.toISOString() ?? null,
          signedAt: r.signedAt?.toISOString() ?? null,
          ...(r.verificationRequired ? { emailVerification: { verifiedAt: r.verifiedAt?.toISOString() ?? null } } : {}),
          timeZone: r.timeZone,
          consent: r.consentedAt ? { at: r.consentedAt.toISOString(), textSha256: r.consentTextSha256 } : null,
          actions: events
            .filter((e) => e.recipientId === r.id && RECIPIENT_ACTIONS.has(e.event))
            .map((e) => ({ event: e.event, at: e.at.toISOString(), ip: e.ip, userAgent: e.userAgent })),
        })),
        events: events.map((e) => ({ at: e.at.toISOString(), event: e.event, recipientEmail: e.recipientId ? (byId.get(e.recipientId)?.email ?? null) : null, ip: e.ip })),
        ...(handovers.length ? { handovers: handoversForCertificate(handovers) } : {}),
        test: doc.testSend,
        verificationUrl: deps.verificationUrl,
        senderName: doc.meta.senderName ?? null,
        // Each signer's attachment with its SHA-256 (the files themselves are not in the sealed PDF).
        ...(attachments.length ? { attachments: attachments.map((a) => ({ name: a.name, contentType: a.contentType, size: a.size, sha256: a.sha256, recipientEmail: byId.get(a.recipientId)?.email ?? '', uploadedAt: a.uploadedAt.toISOString() })) } : {}),
        // One language per certificate, the account's default as copied onto the document at create:
        // a certificate is one record, read by every party, whatever language each was addressed in.
        locale: resolveLocale(doc.meta.defaultLocale),
        // The text as copied onto the document at create (the built-in one in the certificate's language:
        // each recipient agreed to it in theirs, whose hash their own line gives); a document made before
        // that has none to print.
        ...(doc.meta.consentText ? { consent: certificateConsent(doc.meta.consentText, resolveLocale(doc.meta.defaultLocale)) } : {}),
      };
      const sealed = await deps.seal({ original, fields: stamps, hide: fields.flatMap((f) => (f.hide ? [f.hide] : [])), certificate });
      // The hash of the file exactly as stored and served: how /verify-document recognises it; and of
      // what its signature (the last one, ours) covers, should bytes it does not cover change.
      const sealedSha256 = sha256Hex(Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength));
      const [seal] = findSignedRanges(sealed);
      const signedContent = seal ? signedContentSha256(sealed, seal) : null;
      // When archival re-timestamping must act by (SIGNING_ARCHIVE_RETIMESTAMP_DAYS).
      const archiveExpiresAt = timestampHorizon(sealed);
      // A key of this attempt's own: a run that overran its lease while another completed the
      // document must not replace the committed file (nor the attachments already queued with it).
      const signedKey = documentKey(doc.id, `signed-${randomUUID()}.pdf`);
      await storage.put(signedKey, sealed);

      const committed = await deps.db.transaction(async (tx) => {
        const done = await deps.lockAndSync(tx, doc.id, async () => {
          const current = await repo.document(tx, doc.id, true);
          if (!current || current.status !== 'SEALING') return false;
          await repo.updateDocument(tx, doc.id, { status: 'COMPLETED', signedKey, sealedSha256, signedContentSha256: signedContent, completedAt, archiveExpiresAt });
          await repo.insertEvent(tx, { documentId: doc.id, event: 'COMPLETED' });
          for (const r of recipients) await deps.notifier.completed(tx, current, r, signedKey, attachments, envelopeId);
          return true;
        });
        return done?.value === true;
      });
      // Only when the transaction committed without us: nothing references this attempt's file.
      // (A failed commit keeps it: the failure may have come after COMMIT reached the database.)
      if (!committed) await storage.delete(signedKey);
    },
  });
}
