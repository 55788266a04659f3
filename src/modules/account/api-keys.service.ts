import type { Actor, RequestContext } from '../../context.js';
import type { DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { AuditService } from '../audit/audit.service.js';
import type { AccountRepo, ApiKeyRow } from './account.repo.js';
import { generateApiKey } from './api-keys.js';

/** Active keys per customer: enough for every integration and environment, few enough that a leak stays countable. */
export const MAX_ACTIVE_KEYS = 20;

export const KEY_LABEL_MAX = 60;

/**
 * A key's label as the holder typed it: trimmed, empty meaning none, at most 60 characters on one
 * line. Control characters are refused rather than stripped: a label is shown in tables and audit rows,
 * where a line break or an escape sequence would forge what a reader sees.
 */
export function checkKeyLabel(raw: unknown): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'string') throw labelError('must be text');
  const label = raw.trim();
  if (label === '') return null;
  if ([...label].length > KEY_LABEL_MAX) throw labelError(`at most ${KEY_LABEL_MAX} characters`);
  if (/[\p{Cc}\p{Cf}\u2028\u2029]/u.test(label)) throw labelError('no control characters or line breaks');
  return label;
}
const labelError = (message: string) => new AppError('VALIDATION_ERROR', `A key's label: ${message}`, { details: [{ path: 'body.label', message }] });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type ApiKeyView = Pick<ApiKeyRow, 'id' | 'prefix' | 'label' | 'mode' | 'createdAt' | 'lastUsedAt' | 'revokedAt'>;

const view = (k: ApiKeyRow): ApiKeyView => ({ id: k.id, prefix: k.prefix, label: k.label, mode: k.mode, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt, revokedAt: k.revokedAt });

/**
 * The account holder's own keys (the dashboard): mint and revoke. A key is minted only by a deliberate
 * action of a signed-in person (SPEC.md: the cookie never mints a key on its own), so an API key, a
 * wallet JWT or an x402 payment cannot mint or revoke here.
 */
export function createApiKeysService(deps: { accounts: Pick<AccountRepo, 'insertApiKey' | 'revokeKey' | 'listKeys' | 'countActiveKeysLocked' | 'setKeyLabel'>; audit: Pick<AuditService, 'customer'>; maxActiveKeys?: number }) {
  const max = deps.maxActiveKeys ?? MAX_ACTIVE_KEYS;

  function requireSession(actor: Actor): void {
    if (actor.via !== 'session') throw new AppError('FORBIDDEN', 'API keys are minted and revoked by the account holder in the dashboard');
  }

  return {
    /** Active keys first, then revoked ones; newest first within each. */
    async list(db: DbOrTx, actor: Actor): Promise<ApiKeyView[]> {
      const rows = await deps.accounts.listKeys(db, actor.customerId);
      return [...rows.filter((k) => !k.revokedAt), ...rows.filter((k) => k.revokedAt)].map(view);
    },

    /** The key itself is in the answer and nowhere else: only its hash and display prefix are stored. */
    async mint(tx: Tx, ctx: RequestContext, mode: 'live' | 'test', rawLabel?: unknown): Promise<{ key: string; view: ApiKeyView }> {
      requireSession(ctx.actor);
      const label = checkKeyLabel(rawLabel);
      const active = await deps.accounts.countActiveKeysLocked(tx, ctx.actor.customerId);
      if (active >= max) throw new AppError('API_KEY_LIMIT_REACHED', `This account has ${active} active API keys, the most allowed; revoke one you no longer use first`, { maxActiveKeys: max });
      const k = generateApiKey(mode);
      const row = await deps.accounts.insertApiKey(tx, { customerId: ctx.actor.customerId, mode, keyHash: k.keyHash, prefix: k.prefix, label });
      await deps.audit.customer(tx, ctx, { action: 'api_key.create', resourceType: 'api_key', resourceId: row.id, metadata: { keyMode: mode, prefix: k.prefix, label } });
      return { key: k.key, view: view(row) };
    },

    /** Renames one of the caller's keys (revoked ones too: the label tells what a revoked key was for). */
    async relabel(tx: Tx, ctx: RequestContext, keyId: string, rawLabel: unknown): Promise<ApiKeyView> {
      requireSession(ctx.actor);
      const label = checkKeyLabel(rawLabel);
      const row = UUID.test(keyId) ? await deps.accounts.setKeyLabel(tx, ctx.actor.customerId, keyId, label) : undefined;
      if (!row) throw new AppError('API_KEY_NOT_FOUND', 'No such API key in this account');
      await deps.audit.customer(tx, ctx, { action: 'api_key.relabel', resourceType: 'api_key', resourceId: row.id, metadata: { prefix: row.prefix, label } });
      return view(row);
    },

    /**
     * Revokes one of the caller's keys (another customer's is 404). The revocation commits a NOTIFY
     * that evicts the key from every node's cache; the caller evicts it in its own process after the
     * commit with the returned hash.
     */
    async revoke(tx: Tx, ctx: RequestContext, keyId: string): Promise<{ keyHash: string; view: ApiKeyView }> {
      requireSession(ctx.actor);
      const row = UUID.test(keyId) ? await deps.accounts.revokeKey(tx, ctx.actor.customerId, keyId) : undefined;
      if (!row) throw new AppError('API_KEY_NOT_FOUND', 'No such API key in this account');
      await deps.audit.customer(tx, ctx, { action: 'api_key.revoke', resourceType: 'api_key', resourceId: row.id, metadata: { prefix: row.prefix } });
      return { keyHash: row.keyHash, view: view(row) };
    },
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
