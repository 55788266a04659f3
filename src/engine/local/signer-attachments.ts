import { randomUUID } from 'node:crypto';
import type { DbOrTx, Tx } from '../../db/client.js';
import type { AttachmentsConfig } from '../../config-attachments.js';
import { AppError } from '../../errors.js';
import type { AttachmentCheck, AttachmentCheckJob } from '../../pdf/attachment-check.js';
import { ATTACHMENT_TYPES, type AttachmentType } from '../../pdf/attachment-types.js';
import { putContent, type BlobStorage } from '../../providers/storage/index.js';
import { documentKey } from './local-engine.js';
import type { AttachmentRow, DocumentRow, FieldRow, LocalEngineRepo, RecipientRow } from './local-engine.repo.js';
import { assertCanAct, consentRequired, type ClientInfo } from './recipient-actions.js';

/** The uploaded file as the multipart parser left it: spooled to disk, counted, with the client's name and type. */
export type AttachmentUpload = { path: string; size: number; mimetype: string; filename: string };

type Ctx = { doc: DocumentRow; me: RecipientRow; recipients: RecipientRow[]; fields: FieldRow[]; attachments: AttachmentRow[] };

const EXTENSION: Record<AttachmentType, string> = { 'application/pdf': 'pdf', 'image/png': 'png', 'image/jpeg': 'jpg' };
const BY_EXTENSION: Record<string, AttachmentType> = { pdf: 'application/pdf', png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg' };

/**
 * The type the client claims: its Content-Type when it is one of ours; for a generic one
 * (application/octet-stream, none) the file name's extension. The bytes must then match (the sandbox checks).
 */
export function claimedType(upload: Pick<AttachmentUpload, 'mimetype' | 'filename'>): AttachmentType {
  const type = upload.mimetype.split(';')[0].trim().toLowerCase();
  if ((ATTACHMENT_TYPES as readonly string[]).includes(type)) return type as AttachmentType;
  const ext = /\.([A-Za-z0-9]{1,5})$/.exec(upload.filename)?.[1]?.toLowerCase() ?? '';
  if ((type === '' || type === 'application/octet-stream') && BY_EXTENSION[ext]) return BY_EXTENSION[ext];
  throw new AppError('ATTACHMENT_TYPE_UNSUPPORTED', `A signer attachment is a PDF, PNG or JPEG (application/pdf, image/png, image/jpeg), not ${type || 'untyped'}`);
}

/**
 * The file name kept and shown: no directory, no control or bidi-override characters, no quotes or
 * backslashes (it goes into Content-Disposition and emails), at most 120 characters, with the
 * extension its checked type has. Never empty.
 */
export function sanitiseName(filename: string, type: AttachmentType): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  let name = base.normalize('NFC').replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069"\\<>|*?:]/g, '').replace(/\s+/g, ' ').trim();
  name = name.replace(/^\.+/, '').replace(/\.[A-Za-z0-9]{1,5}$/, '');
  name = [...name].slice(0, 110).join('').trim() || 'attachment';
  return `${name}.${EXTENSION[type]}`;
}

/** The recipient's side of FILE fields: checks, the sandbox check, storage, and the row, in that order. */
/** A checked file in the store, not yet referenced by a row. */
export type StoredAttachment = AttachmentCheck & { blobKey: string; name: string };

export type SignerAttachments = {
  plan(db: DbOrTx, ctx: Ctx, fieldId: number, size: number): Promise<void>;
  store(ctx: Ctx, upload: AttachmentUpload, type: AttachmentType): Promise<StoredAttachment>;
  record(tx: Tx, ctx: Ctx, fieldId: number, stored: StoredAttachment, client: ClientInfo): Promise<{ attachment: AttachmentRow; replaced: AttachmentRow | undefined }>;
  discard(blobKey: string): Promise<void>;
};

export function createSignerAttachments(deps: {
  repo: Pick<LocalEngineRepo, 'putAttachment' | 'insertEvent' | 'uploadCount'>;
  storage: BlobStorage;
  config: AttachmentsConfig;
  /** The sandboxed check (attachment-sandbox.ts); `owner` keeps the worker queue fair per document. */
  check: (job: AttachmentCheckJob, owner: string) => Promise<AttachmentCheck>;
}): SignerAttachments {
  const { repo, storage, config } = deps;

  /** Everything decidable before reading the file: the recipient may act, the field is theirs and FILE, the bounds hold. */
  async function plan(db: DbOrTx, ctx: Ctx, fieldId: number, size: number): Promise<void> {
    assertCanAct(ctx.doc, ctx.me, ctx.recipients);
    if (!ctx.me.consentedAt) throw consentRequired();
    const field = ctx.fields.find((f) => f.id === fieldId);
    if (!field) throw new AppError('VALIDATION_ERROR', `fieldId: field ${fieldId} is not one of yours`, { details: [{ path: 'params.fieldId', message: 'not one of your fields' }] });
    if (field.type !== 'FILE') throw new AppError('INVALID_FIELD_TYPE', `Field ${fieldId} is a ${field.type} field; files are attached to FILE fields`);
    if (size > config.maxBytes) throw new AppError('ATTACHMENT_TOO_LARGE', `The file is ${size} bytes; at most ${config.maxBytes} are accepted`, { maxBytes: config.maxBytes });
    const others = ctx.attachments.filter((a) => a.fieldId !== fieldId).reduce((n, a) => n + a.size, 0);
    if (others + size > config.maxTotalBytes) throw new AppError('ATTACHMENT_TOO_LARGE', `The envelope's attachments would come to ${others + size} bytes; at most ${config.maxTotalBytes} are accepted`, { maxTotalBytes: config.maxTotalBytes });
    if ((await repo.uploadCount(db, ctx.me.id)) >= config.maxUploads) throw new AppError('ATTACHMENT_LIMIT_REACHED', `At most ${config.maxUploads} uploads per recipient`, { limit: config.maxUploads });
  }

  return {
    plan,

    /** Checks the file in the sandbox and stores it under a key of its own; answers what the row needs. Before any transaction. */
    async store(ctx: Ctx, upload: AttachmentUpload, type: AttachmentType) {
      const checked = await deps.check({ file: upload.path, claimed: type, maxPages: config.maxPages }, ctx.doc.id);
      const blobKey = documentKey(ctx.doc.id, `attachments/${randomUUID()}.${EXTENSION[checked.contentType]}`);
      // The upload's file is moved where the store can: it is the request's, removed when the request ends otherwise.
      await putContent(storage, blobKey, { file: upload.path }, { move: true });
      return { blobKey, name: sanitiseName(upload.filename, checked.contentType), ...checked };
    },

    /** The row, under the envelope lock, re-planned there (a race is refused as the first check would have refused it). */
    async record(tx: Tx, ctx: Ctx, fieldId: number, stored: StoredAttachment, client: ClientInfo) {
      await plan(tx, ctx, fieldId, stored.size);
      const result = await repo.putAttachment(tx, { documentId: ctx.doc.id, recipientId: ctx.me.id, fieldId, blobKey: stored.blobKey, name: stored.name, contentType: stored.contentType, size: stored.size, sha256: stored.sha256 });
      await repo.insertEvent(tx, { documentId: ctx.doc.id, recipientId: ctx.me.id, event: 'ATTACHMENT_UPLOADED', ip: client.ip, userAgent: client.userAgent });
      return result;
    },

    /** A blob no committed row points to (refused, or replaced): removed now; a failed removal is the blob sweep's. */
    async discard(blobKey: string): Promise<void> {
      await storage.delete(blobKey).catch(() => undefined);
    },
  };
}


/** What the signing page and the API show of an attachment. */
export const attachmentDto = (a: AttachmentRow) => ({ attachmentId: a.id, fieldId: a.fieldId, name: a.name, contentType: a.contentType, size: a.size, sha256: a.sha256, uploadedAt: a.uploadedAt.toISOString() });
