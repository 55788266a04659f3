import { z } from 'zod';

export const VERIFY_STATUSES = ['SEALED', 'MODIFIED', 'NOT_SEALED'] as const;

export const ZSealedEnvelope = z
  .object({
    envelopeId: z.string().describe('The envelope id printed on the certificate page'),
    title: z.string().nullable(),
    completedAt: z.string().describe('When the last signer acted and the document was sealed (ISO 8601)'),
    testMode: z.boolean().describe('A test-mode send: free, not a binding signature'),
    signers: z.array(z.object({ name: z.string(), role: z.enum(['SIGNER', 'APPROVER']), signedAt: z.string().nullable() })).describe('Who signed or approved, in recipient order'),
  })
  .meta({ id: 'SealedEnvelope' });

const ZTimeOf = z.object({
  time: z.string().nullable().describe("The token's genTime (ISO 8601)"),
  tsa: z.string().nullable().describe("The timestamp authority: its certificate's common name"),
  verified: z.boolean().describe("The TSA's signature over the token verifies under the certificate the token carries (whether that TSA is trusted is the reader's call)"),
});

export const ZSealEvidence = z
  .object({
    level: z.enum(['B-B', 'B-T', 'B-LT', 'B-LTA']).describe('The PAdES level the file shows. B-B: signature only. B-T: plus a verified RFC 3161 timestamp of the signature. B-LT: plus revocation data (OCSP responses or CRLs) in the DSS. B-LTA: plus a verified document timestamp over all of it'),
    signatureTime: z.string().nullable().describe("When it was signed (ISO 8601): the TSA's time when timeSource is TSA, else the time the signature claims"),
    timeSource: z.enum(['TSA', 'SIGNER_CLOCK']).describe("TSA: an RFC 3161 timestamp that verifies and stamps this signature. SIGNER_CLOCK: the sealing server's own clock, a claim only"),
    timestamp: ZTimeOf.extend({ matchesSignature: z.boolean().describe("The token's message imprint is the hash of this signature's value") })
      .nullable()
      .describe('The signature timestamp token, when the signature carries one'),
    dss: z
      .object({ certificates: z.number().int(), ocspResponses: z.number().int(), crls: z.number().int() })
      .nullable()
      .describe('The Document Security Store written after the seal (long-term validation data); null when there is none'),
    documentTimestamps: z.array(ZTimeOf.extend({ tsaCertificateExpires: z.string().nullable() })).describe('Document timestamps over the whole sealed file (B-LTA and archival re-timestamps), latest first'),
  })
  .meta({ id: 'SealEvidence' });

export const ZDocumentVerification = z
  .object({
    status: z.enum(VERIFY_STATUSES).describe('SEALED: sealed by this server and unchanged since. MODIFIED: sealed by this server, but changed since. NOT_SEALED: not sealed by this server'),
    sealedByThisServer: z.boolean(),
    unchanged: z.boolean().describe('True only for SEALED'),
    summary: z.string().describe('One sentence saying the same for a person'),
    sha256: z.string().describe('SHA-256 (hex) of the file as uploaded'),
    envelope: ZSealedEnvelope.nullable().describe('The sealed envelope, when this server has its record and the file (or its signed revision) is the one it sealed, byte for byte or but for bytes its signature does not cover; always set for SEALED'),
    signature: z
      .object({
        intact: z.boolean().describe('The bytes the signature covers still match it'),
        coversWholeFile: z.boolean().describe('False when content was appended after the signature (an incremental update)'),
        signedAt: z.string().nullable().describe('The signing time inside the signature'),
      })
      .nullable()
      .describe("This server's PAdES seal signature, verified against its sealing certificate; null when the file carries none"),
    evidence: ZSealEvidence.nullable().describe("What the seal proves beyond this server's signature: trusted time, PAdES level, revocation data, document timestamps. Null when the file carries no signature of this server's"),
  })
  .meta({ id: 'DocumentVerification' });

export type TDocumentVerification = z.infer<typeof ZDocumentVerification>;
export type TSealedEnvelope = z.infer<typeof ZSealedEnvelope>;
