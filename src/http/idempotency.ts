import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db, Tx } from '../db/client.js';
import { sha256Hex } from '../lib/crypto.js';
import { AppError } from '../errors.js';
import { testModeRequested } from './auth.js';
import { routeConfigOf } from './route-config.js';
import type { PeriodicTask } from '../jobs/worker.js';
import type { Idempotency, PaymentGate, Reservation } from './idempotency-core.js';
import type { IdempotencyRepo, IdempotencyScope, StoredResponse } from './idempotency.repo.js';

export type { PaymentGate, Reservation } from './idempotency-core.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `required` on billable operations; every other customer POST/PUT/PATCH/DELETE accepts the header.
     * Operator routes opt in with it, and must name their customer as the `:id` path parameter.
     * `handler`: the route keys its calls itself and ignores the header (POST /mcp: an idempotencyKey per tools/call).
     */
    idempotency?: 'required' | 'optional' | 'handler';
  }
  interface FastifyRequest {
    idempotency?: Reservation;
    /** SHA-256 of the raw body (JSON or multipart), for the idempotency fingerprint. */
    bodyHash?: string;
    /** A payment that must settle before the request's transaction commits (x402; attached by the resolver that accepted it). */
    payment?: PaymentGate;
  }
  interface FastifyInstance {
    settleIdempotencyOnError(request: FastifyRequest, err: AppError, body: string): Promise<void>;
  }
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REPLAYED_HEADERS = ['content-type', 'location'];
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * Where each door's keys live among a customer's idempotency records, so that a key picked at one door
 * never names a record written at another: MCP's idempotencyKey `k` is `mcp:k`, an operator's
 * Idempotency-Key `k` for the customer is `ops:k`, the dashboard's create form's hidden key `dashboard:k`, and a customer's REST key is stored as sent unless it
 * begins with one of these prefixes, which puts it under `rest:` (see restScope).
 */
export const KEY_NAMESPACES = { mcp: 'mcp:', ops: 'ops:', rest: 'rest:', dashboard: 'dashboard:' } as const;
const PREFIXES = Object.values(KEY_NAMESPACES);

/**
 * The Idempotency-Key header around the core (idempotency-core.ts): this hook reserves the key; the
 * handler's transaction (`commitMutation`) does the work and writes the response into the reservation,
 * committing once. Requests that fail validation never reach this hook and are not recorded, as with
 * Stripe: a corrected retry may reuse the key.
 */
export function registerIdempotency(app: FastifyInstance, opts: { idempotency: Idempotency; repo: IdempotencyRepo; db: Db }): void {
  const { idempotency } = opts;

  /**
   * A customer's REST key. Kept as sent, so the records every REST call wrote before the namespaces
   * existed keep their keys; one that begins like a namespace moves under `rest:`, out of MCP's and the
   * operator's reach. Such a key may still have a record from before, stored as sent: the request that
   * wrote it (the same fingerprint; an MCP or operator fingerprint never equals a REST one) is still
   * answered from it until it expires, so no retry runs twice across the upgrade. Its only cost is one
   * read, for keys that begin like a namespace.
   */
  async function restScope(owner: { customerId: string; mode: 'live' | 'test' }, key: string, fingerprint: string): Promise<IdempotencyScope> {
    const asSent = { ...owner, key };
    if (!PREFIXES.some((p) => key.startsWith(p))) return asSent;
    return (await opts.repo.holds(opts.db, asSent, fingerprint)) ? asSent : { ...owner, key: KEY_NAMESPACES.rest + key };
  }

  // A callback hook: a read (most requests) returns at once, with no promise and no turn of the microtask queue.
  app.addHook('preHandler', (request, reply, done) => {
    const mode = routeConfigOf(request).idempotency;
    if (!MUTATING.has(request.method) || mode === 'handler') return done();
    reserve(request, reply, mode).then(() => done(), done);
  });

  async function reserve(request: FastifyRequest, reply: FastifyReply, mode: 'required' | 'optional' | undefined): Promise<void> {
    const owner = ownerOf(request, mode);
    if (!owner) return;
    const header = request.headers['idempotency-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (key === undefined) {
      if (mode === 'required') throw new AppError('IDEMPOTENCY_KEY_REQUIRED', 'This operation is billable and requires an Idempotency-Key header');
      return;
    }
    if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw new AppError('IDEMPOTENCY_KEY_INVALID', `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
    }
    const fingerprint = fingerprintOf(request);
    const { namespace, ...whose } = owner;
    const scope = namespace ? { ...whose, key: namespace + key } : await restScope(whose, key, fingerprint);
    const outcome = await idempotency.reserve(scope, fingerprint).catch((err: unknown) => {
      // An operator route naming a customer that does not exist: nothing to reserve under, and the
      // handler answers 404 without changing anything.
      if (namespace && isForeignKeyViolation(err)) return undefined;
      throw err;
    });
    if (outcome?.kind === 'replay') {
      const { row } = outcome;
      reply.code(row.responseStatus!).headers(row.responseHeaders ?? {}).header('Idempotent-Replayed', 'true');
      reply.send(row.responseBody ?? '');
      return;
    }
    if (outcome) request.idempotency = outcome.reservation;
  }

  // A handler that threw: a 4xx is the request's answer and is stored for replay; a 5xx is not.
  app.decorate('settleIdempotencyOnError', async (request: FastifyRequest, err: AppError, body: string) => {
    const r = request.idempotency;
    if (!r) return;
    request.idempotency = undefined;
    const response: StoredResponse = { status: err.status, headers: { 'content-type': 'application/json; charset=utf-8', ...lower(err.headers) }, body };
    await idempotency.settleFailure(r, err.status, response, request.log);
  });
}

/**
 * Whose keys a request's Idempotency-Key lives among. A customer's own, per mode (namespace undefined:
 * restScope places them). An operator route that opted in reserves under the customer it names, in
 * live mode, with its keys under `ops:` so they cannot meet the customer's own.
 */
function ownerOf(request: FastifyRequest, mode: 'required' | 'optional' | undefined): { customerId: string; mode: 'live' | 'test'; namespace?: string } | undefined {
  if (request.actor) return { customerId: request.actor.customerId, mode: request.actor.mode };
  if (!request.operator || !mode) return undefined;
  const customerId = (request.params as { id?: unknown }).id;
  if (typeof customerId !== 'string') throw new Error(`operator route ${request.routeOptions.url} opts into idempotency but names no :id`);
  return { customerId, mode: 'live', namespace: KEY_NAMESPACES.ops };
}

/**
 * Everything that changes a request's outcome: method, path and query, the body, and the
 * X-Service-Test-Mode header (a free test send is not the live send). The header is only added when it
 * asks for test mode, so records written before it counted keep matching their retries.
 */
function fingerprintOf(request: FastifyRequest): string {
  return sha256Hex(`${request.method} ${request.url}\n${request.bodyHash ?? ''}${testModeRequested(request) ? '\ntest-mode' : ''}`);
}

/** PostgreSQL's foreign_key_violation, as node-postgres or PGlite report it (drizzle may wrap it). */
function isForeignKeyViolation(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (e.code === '23503') return true;
  }
  return false;
}

const lower = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));

export type MutationResult = {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** In-process effects that must wait for the commit (e.g. evicting a cache entry). */
  afterCommit?: () => void;
};

/**
 * Runs a REST state change through the core's `commit`: one transaction, and when the request holds an
 * idempotency reservation, the serialized response stored in it; a paid request's payment settled just before.
 */
export function createMutationRunner(idempotency: Idempotency) {
  return async function commitMutation(request: FastifyRequest, reply: FastifyReply, work: (tx: Tx) => Promise<MutationResult>): Promise<void> {
    // A paid call (x402): the payment was verified before the key was reserved (a replay never gets
    // here); it settles now, before the work's transaction opens.
    const { value, response, receipt } = await idempotency.commit({ reservation: request.idempotency, payment: request.payment }, async (tx) => {
      const result = await work(tx);
      const response: StoredResponse = {
        status: result.status,
        headers: { ...(result.status === 204 ? {} : { 'content-type': 'application/json; charset=utf-8' }), ...lower(result.headers ?? {}) },
        body: result.status === 204 ? '' : JSON.stringify(result.body),
      };
      return { value: result, response };
    });
    request.idempotency = undefined;
    value.afterCommit?.();
    reply.code(response.status);
    for (const [k, v] of Object.entries(response.headers)) if (REPLAYED_HEADERS.includes(k) || k.startsWith('x-')) reply.header(k, v);
    reply.headers(receipt);
    reply.send(response.body);
  };
}

export type CommitMutation = ReturnType<typeof createMutationRunner>;

/** Periodic: records past their TTL are deleted (a lapsed record already stopped answering). */
export const idempotencyPurgeTask = (repo: IdempotencyRepo): PeriodicTask => ({
  name: 'purge-idempotency-keys',
  run: async (tx) => void (await repo.purgeExpired(tx)),
});
