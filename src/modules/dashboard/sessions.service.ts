import { randomBytes } from 'node:crypto';
import type { DbOrTx } from '../../db/client.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { SessionRow, SessionsRepo } from './sessions.repo.js';

/** A session ends after this long without a request… */
export const SESSION_IDLE_MS = 2 * 3_600_000;
/** …and this long after sign-in, whatever happens (a stolen cookie does not live forever). */
export const SESSION_ABSOLUTE_MS = 24 * 3_600_000;
/** lastSeenAt is written at most this often, so a page view is not a write. */
const TOUCH_EVERY_MS = 60_000;

/** The cookie's value: 256 random bits. Only its SHA-256 is stored (DESIGN §4.6). */
const SESSION_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export type DashboardSession = Pick<SessionRow, 'id' | 'customerId' | 'method' | 'createdAt' | 'expiresAt'>;

/** Server-side dashboard sessions: rows in our database, so any node can read them and sign-out is final. */
export function createSessionsService(deps: { repo: SessionsRepo; now: () => Date }) {
  return {
    async create(tx: DbOrTx, input: { customerId: string; method: SessionRow['method']; ip: string | null; userAgent: string | null }): Promise<{ token: string; session: DashboardSession }> {
      const token = randomBytes(32).toString('base64url');
      const now = deps.now();
      const session = await deps.repo.insert(tx, {
        ...input,
        userAgent: input.userAgent?.slice(0, 300) ?? null,
        tokenHash: sha256Hex(token),
        expiresAt: new Date(now.getTime() + SESSION_ABSOLUTE_MS),
        now,
      });
      return { token, session };
    },

    /** The live session a cookie names, or undefined (unknown, signed out, idle too long, or past its end). */
    async resolve(db: DbOrTx, token: string | undefined): Promise<DashboardSession | undefined> {
      if (!token || !SESSION_TOKEN.test(token)) return undefined;
      const row = await deps.repo.findLive(db, sha256Hex(token));
      if (!row) return undefined;
      const now = deps.now().getTime();
      if (now >= row.expiresAt.getTime() || now - row.lastSeenAt.getTime() >= SESSION_IDLE_MS) return undefined;
      if (now - row.lastSeenAt.getTime() >= TOUCH_EVERY_MS) await deps.repo.touch(db, row.id, new Date(now));
      return row;
    },

    /** Sign-out: the row is revoked, so the cookie is worthless even if a copy survives. */
    async revoke(db: DbOrTx, token: string | undefined): Promise<SessionRow | undefined> {
      if (!token || !SESSION_TOKEN.test(token)) return undefined;
      return deps.repo.revoke(db, sha256Hex(token), deps.now());
    },
  };
}

export type SessionsService = ReturnType<typeof createSessionsService>;
