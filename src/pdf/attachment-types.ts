/**
 * The types a signer may attach: apart from attachment-check.ts, so the main thread, which only
 * names them, does not load @libpdf/core with the checker (docs/operating.md: Memory).
 */
export const ATTACHMENT_TYPES = ['application/pdf', 'image/png', 'image/jpeg'] as const;
export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];
