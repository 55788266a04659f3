import { readFile } from 'node:fs/promises';
import type { DbOrTx, Tx } from '../../db/client.js';
import type { RequestContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { sha256Hex } from '../../lib/crypto.js';
import { imageProblem, readImageSize } from '../../pdf/image-header.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import type { AuditService } from '../audit/audit.service.js';
import type { AccountRepo } from './account.repo.js';
import type { AccountService } from './account.service.js';
import type { TAccount } from './account.schemas.js';

/** A logo is a header image, not a photo: 256 KB holds a crisp 2000-pixel-wide PNG of a wordmark. */
export const LOGO_MAX_BYTES = 256 * 1024;
/** Shown at most a few hundred pixels wide; larger is only a cost to every recipient who loads it. */
export const LOGO_MAX_SIDE = 2000;
export const LOGO_TYPES = ['image/png', 'image/jpeg'] as const;
/**
 * Logos are never deleted (below), so uploads are what a key could fill storage with: ten a day is
 * plenty for an account finding its look, and bounds one account to 2.5 MB a day.
 */
export const LOGO_UPLOADS_PER_DAY = 10;

/**
 * Logos are stored content-addressed, `brand/<sha256>.<png|jpg>`, and never deleted: documents copy
 * the file name at create (what recipients saw is what was set then), so a replaced or removed logo
 * still shows on the documents sent with it. Identical bytes from two accounts are one blob.
 */
const PREFIX = 'brand/';
const FILE = /^[0-9a-f]{64}\.(png|jpg)$/;

export const isLogoFile = (file: string): boolean => FILE.test(file);
export const logoContentType = (file: string): string => (file.endsWith('.png') ? 'image/png' : 'image/jpeg');
export const logoKeyOf = (file: string): string => PREFIX + file;
/** The file under /brand/ of a customer's logo_key; null when none (or a key of another shape). */
export const logoFileOf = (key: string | null): string | null => (key?.startsWith(PREFIX) && FILE.test(key.slice(PREFIX.length)) ? key.slice(PREFIX.length) : null);
/** The public, immutable address of a logo file. */
export const logoUrlOf = (publicUrl: string, file: string | null): string | null => (file ? `${publicUrl.replace(/\/+$/, '')}/brand/${file}` : null);

/**
 * The file name of acceptable logo bytes, or the refusal: the type said, then the size, then the
 * header (read, never decoded: a small PNG can declare 30000×30000 pixels), then that the header is
 * what the type said.
 */
export function checkLogo(bytes: Uint8Array, declaredType: string): string {
  const type = declaredType.split(';')[0].trim().toLowerCase();
  if (!(LOGO_TYPES as readonly string[]).includes(type)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `A logo is image/png or image/jpeg, not ${type || 'untyped'}`);
  if (bytes.length > LOGO_MAX_BYTES) throw new AppError('PAYLOAD_TOO_LARGE', `The logo is ${bytes.length} bytes; at most ${LOGO_MAX_BYTES} are accepted`, { maxBytes: LOGO_MAX_BYTES });
  const problem = imageProblem(bytes);
  if (problem) throw new AppError('LOGO_INVALID', `The logo ${problem}`);
  const size = readImageSize(bytes)!;
  if (size.width > LOGO_MAX_SIDE || size.height > LOGO_MAX_SIDE) {
    throw new AppError('LOGO_INVALID', `The logo is ${size.width}×${size.height} pixels; at most ${LOGO_MAX_SIDE} pixels a side are accepted`);
  }
  if ((size.format === 'png') !== (type === 'image/png')) throw new AppError('LOGO_INVALID', `The logo's bytes are a ${size.format.toUpperCase()}, but its Content-Type says ${type}`);
  return `${sha256Hex(Buffer.from(bytes))}.${size.format === 'png' ? 'png' : 'jpg'}`;
}

export type LogoUpload = { path: string; size: number; mimetype: string };

export function createLogoService(deps: {
  db: DbOrTx;
  storage: BlobStorage;
  accounts: Pick<AccountRepo, 'updateSettings'>;
  account: Pick<AccountService, 'getAccount'>;
  audit: Pick<AuditService, 'customer'>;
  /** Uploads of this account in the last day (the audit log's `account.logo.set` rows). */
  uploadsSince: (db: DbOrTx, customerId: string, since: Date) => Promise<number>;
  now?: () => Date;
}) {
  const holderOnly = (ctx: RequestContext) => {
    if (ctx.actor.via === 'x402') throw new AppError('X402_NOT_APPLICABLE', 'The logo belongs to an account: use an API key, a wallet JWT or the dashboard, not an x402 payment');
  };
  const setKey = async (tx: Tx, ctx: RequestContext, logoKey: string | null, action: string, metadata: Record<string, unknown>): Promise<TAccount> => {
    const customer = await deps.accounts.updateSettings(tx, ctx.actor.customerId, { logoKey });
    if (!customer) throw new AppError('UNAUTHORIZED', 'The credential no longer resolves to a customer');
    await deps.audit.customer(tx, ctx, { action, resourceType: 'customer', resourceId: customer.id, metadata });
    return deps.account.getAccount(tx, ctx.actor);
  };

  return {
    /**
     * Checks and stores the upload, outside any transaction (a blob is written before the row that
     * names it, DESIGN §4.14); `commit` then points the account at it. The size is checked before a
     * byte is read into memory.
     */
    async store(ctx: RequestContext, upload: LogoUpload | undefined): Promise<{ commit: (tx: Tx) => Promise<TAccount> }> {
      holderOnly(ctx);
      if (!upload || upload.size === 0) throw new AppError('MISSING_FILE', 'The multipart body has no file part: send the logo as `file`');
      if (upload.size > LOGO_MAX_BYTES) throw new AppError('PAYLOAD_TOO_LARGE', `The logo is ${upload.size} bytes; at most ${LOGO_MAX_BYTES} are accepted`, { maxBytes: LOGO_MAX_BYTES });
      const since = new Date((deps.now?.() ?? new Date()).getTime() - 86_400_000);
      if ((await deps.uploadsSince(deps.db, ctx.actor.customerId, since)) >= LOGO_UPLOADS_PER_DAY) {
        throw new AppError('RATE_LIMITED', `At most ${LOGO_UPLOADS_PER_DAY} logo uploads a day: try again tomorrow`, {}, { 'retry-after': '3600' });
      }
      const file = checkLogo(await readFile(upload.path), upload.mimetype);
      await deps.storage.putFile(logoKeyOf(file), upload.path);
      return { commit: (tx) => setKey(tx, ctx, logoKeyOf(file), 'account.logo.set', { file }) };
    },

    async remove(tx: Tx, ctx: RequestContext): Promise<TAccount> {
      holderOnly(ctx);
      return setKey(tx, ctx, null, 'account.logo.remove', {});
    },

    /** A logo's bytes for the public route; undefined for a name of another shape or no such blob. */
    async read(file: string): Promise<Uint8Array | undefined> {
      return isLogoFile(file) ? deps.storage.get(logoKeyOf(file)) : undefined;
    },
  };
}

export type LogoService = ReturnType<typeof createLogoService>;
