import { z } from 'zod';

const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);
const int = (min: number, max: number) => z.preprocess(unsetIfEmpty, z.coerce.number().int().min(min).max(max).optional());
const MB = 1024 * 1024;

/** Signer attachments (FILE fields), spread into config.ts's environment schema. */
export const ATTACHMENT_ENV = {
  SIGNER_ATTACHMENT_MAX_BYTES: int(1024, 100 * MB).default(10 * MB),
  SIGNER_ATTACHMENTS_MAX_TOTAL_BYTES: int(1024, 1024 * MB).default(25 * MB),
  SIGNER_ATTACHMENT_MAX_PAGES: int(1, 10_000).default(200),
  SIGNER_ATTACHMENT_MAX_UPLOADS: int(1, 1000).default(20),
  SIGNER_ATTACHMENTS_EMAIL_MAX_BYTES: int(0, 100 * MB).default(10 * MB),
};

type AttachmentEnv = z.infer<z.ZodObject<typeof ATTACHMENT_ENV>>;

export type AttachmentsConfig = Readonly<{
  /** One file at most (PDF, PNG or JPEG). */
  maxBytes: number;
  /** All of one envelope's attachments together. */
  maxTotalBytes: number;
  /** Pages of an attached PDF. */
  maxPages: number;
  /** Uploads (first ones and replacements) per recipient: each costs a sandbox check. */
  maxUploads: number;
  /** Attachments carried by each completion email together; above it the email says where to fetch them. */
  emailMaxBytes: number;
}>;

export function attachmentsConfig(e: AttachmentEnv): AttachmentsConfig {
  return Object.freeze({
    maxBytes: e.SIGNER_ATTACHMENT_MAX_BYTES,
    maxTotalBytes: Math.max(e.SIGNER_ATTACHMENTS_MAX_TOTAL_BYTES, e.SIGNER_ATTACHMENT_MAX_BYTES),
    maxPages: e.SIGNER_ATTACHMENT_MAX_PAGES,
    maxUploads: e.SIGNER_ATTACHMENT_MAX_UPLOADS,
    emailMaxBytes: e.SIGNER_ATTACHMENTS_EMAIL_MAX_BYTES,
  });
}
