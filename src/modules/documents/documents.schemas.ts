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
  })
  .meta({ id: 'DocumentVerification' });

export type TDocumentVerification = z.infer<typeof ZDocumentVerification>;
export type TSealedEnvelope = z.infer<typeof ZSealedEnvelope>;
