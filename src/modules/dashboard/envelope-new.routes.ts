import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { toAppError } from '../../http/errors.js';
import type { Idempotency, Reservation } from '../../http/idempotency-core.js';
import { KEY_NAMESPACES, MAX_IDEMPOTENCY_KEY_LENGTH } from '../../http/idempotency.js';
import { readUpload, type MultipartBody } from '../../http/multipart.js';
import { sha256Hex } from '../../lib/crypto.js';
import { newEnvelopePage, RECIPIENT_ROWS, type NewEnvelopeValues } from '../../web/dashboard/envelope-new.js';
import type { ApiKeysService } from '../account/api-keys.service.js';
import { ZCreatePayload } from '../envelopes/envelopes.schemas.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';

type Mode = 'live' | 'test';
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };
const ZMode = z.enum(['live', 'test']);

/** The form's fields as the API's payload (empty recipient rows left out); the values to show it again with. */
function payloadOf(fields: Record<string, string>): { payload: unknown; values: NewEnvelopeValues } {
  const text = (name: string) => (fields[name] ?? '').trim();
  const rows = Array.from({ length: RECIPIENT_ROWS }, (_, i) => ({ name: text(`r${i + 1}_name`), email: text(`r${i + 1}_email`), role: text(`r${i + 1}_role`) || 'SIGNER' }));
  const values = { title: text('title'), message: text('message'), recipients: rows };
  const recipients = rows.filter((r) => r.name || r.email);
  const payload = { title: values.title || undefined, recipients, ...(values.message && { meta: { message: values.message } }) };
  return { payload, values };
}

/**
 * GET /dashboard/envelopes/new and its POST: an envelope from an uploaded PDF through the API's own
 * create (plan, then one transaction with the charge), so its rules, prices and error codes are the
 * API's. The form carries an idempotency key (kept under `dashboard:` among the account's keys): a
 * resubmitted form answers the envelope it made, never a second one. A draft goes to its page with
 * "Prepare fields"; a send that fails shows the API's refusal on the form.
 */
export function envelopeNewSection(deps: {
  db: Db;
  envelopes: Pick<EnvelopesService, 'plan' | 'commitPlanned' | 'create'>;
  apiKeys: Pick<ApiKeysService, 'list'>;
  idempotency: Pick<Idempotency, 'reserve' | 'commit' | 'settleFailure'>;
  maxPdfBytes: number;
}): DashboardSection {
  return (kit) => async (app) => {
    const config = { dashboard: 'session' as const };

    async function render(request: FastifyRequest, reply: FastifyReply, mode: Mode, extra: { values?: NewEnvelopeValues; error?: AppError } = {}) {
      const body = newEnvelopePage({ csrf: kit.csrf.tokenFor(request, reply), idempotencyKey: randomUUID(), mode, values: extra.values, maxPdfMb: Math.floor(deps.maxPdfBytes / 1048576) });
      const flash = extra.error && { kind: 'error' as const, text: `${extra.error.message} (${extra.error.code})` };
      return kit.render(request, reply, { title: 'New envelope', active: 'envelopes', body, flash, status: extra.error?.status });
    }

    const done = (reply: FastifyReply, envelopeId: string, status: string, mode: Mode) =>
      reply.redirect(`/dashboard/envelopes/${envelopeId}?${new URLSearchParams({ ...(mode === 'test' && { mode }), done: status === 'DRAFT' ? 'drafted' : 'created' })}`, 303);

    app.get('/dashboard/envelopes/new', { config }, async (request, reply) => {
      // Test by default for an account that has a test key: its first envelopes should cost nothing.
      const keys = await deps.apiKeys.list(deps.db, sessionContext(request).actor);
      return render(request, reply, keys.some((k) => k.mode === 'test' && !k.revokedAt) ? 'test' : 'live');
    });

    app.post('/dashboard/envelopes/new', { config, schema: { consumes: ['multipart/form-data'] } }, async (request, reply) => {
      const upload = request.body as MultipartBody | undefined;
      const fields = upload?.fields ?? {};
      const mode = ZMode.catch('live').parse(fields.mode);
      const { payload, values } = payloadOf(fields);
      const key = fields.idempotencyKey ?? '';
      let reservation: Reservation | undefined;
      try {
        if (!key || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) throw new AppError('IDEMPOTENCY_KEY_INVALID', 'This form has no idempotency key: reload the page and try again');
        const ctx = sessionContext(request, mode);
        const fingerprint = sha256Hex(`dashboard create\n${request.bodyHash ?? ''}`);
        const outcome = await deps.idempotency.reserve({ customerId: ctx.actor.customerId, mode, key: KEY_NAMESPACES.dashboard + key }, fingerprint);
        if (outcome.kind === 'replay') {
          const stored = JSON.parse(outcome.row.responseBody ?? '{}') as { envelopeId?: string; status?: string; code?: string; error?: string };
          if (stored.envelopeId) return done(reply, stored.envelopeId, stored.status ?? '', mode);
          throw new AppError((stored.code ?? 'INTERNAL_ERROR') as never, stored.error ?? 'This form failed before');
        }
        reservation = outcome.reservation;
        const draft = fields.intent === 'draft';
        // The file checks of the API's upload (count, size, a missing PDF); the payload is the form's, below.
        const { parts } = readUpload({ ...upload, fields: { ...fields, payload: '{}' } }, { fileParts: ['pdf'], missingFile: 'MISSING_PDF', maxBytes: deps.maxPdfBytes, schema: z.unknown() });
        const parsed = ZCreatePayload.safeParse(payload);
        if (!parsed.success) {
          const details = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
          throw new AppError('VALIDATION_ERROR', `${details[0].path || 'form'}: ${details[0].message}`, { details });
        }
        const plan = await deps.envelopes.plan(ctx, { payload: parsed.data, parts, draft });
        const held = reservation;
        const created = await deps.envelopes.commitPlanned(deps.db, plan, () =>
          deps.idempotency.commit({ reservation: held }, async (tx) => {
            const { dto } = await deps.envelopes.create(tx, ctx, plan);
            const answer = { envelopeId: dto.envelopeId, status: draft ? 'DRAFT' : dto.status };
            return { value: answer, response: { status: 201, headers: JSON_TYPE, body: JSON.stringify(answer) } };
          }),
        );
        reservation = undefined;
        return done(reply, created.value.envelopeId, created.value.status, mode);
      } catch (err) {
        const appErr = toAppError(err);
        if (reservation) await deps.idempotency.settleFailure(reservation, appErr.status, { status: appErr.status, headers: JSON_TYPE, body: JSON.stringify({ code: appErr.code, error: appErr.message }) }, request.log);
        if (appErr.status >= 500) throw err;
        return render(request, reply.headers(appErr.headers), mode, { values, error: appErr });
      }
    });
  };
}
