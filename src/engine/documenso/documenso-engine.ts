/**
 * The documenso engine: SigningEngine over Documenso's v2 API (through client.ts, which owns timeouts,
 * retries, the circuit breaker and the error table). Documenso is authoritative and holds everything:
 * nothing is written in the caller's transaction, which each method takes only to satisfy the interface.
 *
 * How it fits the envelope service's transactions (`remote`): the create is made before the
 * transaction (stageDocument: a DRAFT envelope, which discardStaged deletes again when the transaction
 * fails); createDocument answers from the staged data; send (distribute) comes after the charge has
 * committed, with no transaction open (envelope-send.ts), and is idempotent on retry, checking the envelope's state first (Documenso answers a plain 500 to a second
 * distribute of an ended envelope). A recipient's signing link is Documenso's, from its token; tokens
 * never change, so they are kept in memory and read again by envelope after a restart.
 */
import { openAsBlob } from 'node:fs';
import type * as ops from '@documenso/sdk-typescript/models/operations/index.js';
import type { DbOrTx } from '../../db/client.js';
import { hasRules } from '../field-rules.js';
import { AppError } from '../../errors.js';
import type { CreateDocumentInput, CreatedDocument, EngineFieldInput, EngineStatus, SigningEngine, StagedDocument } from '../engine.js';
import type { DocumensoClient } from './client.js';
import { createRequest, currentTurn, engineStatus, fieldMetaOf, MARK, matchFields, numericIdOf, positionOf, refuseFileFields } from './documenso-map.js';

export type DocumensoEngineDeps = {
  client: DocumensoClient;
  /** Documenso's web app origin: a recipient's link is `<webappUrl>/sign/<token>` (formatSigningLink). */
  webappUrl: string;
  /**
   * The engine envelope ids of envelopes holding these engine recipient ids (Signet's rows), for a link
   * not in the cache: Documenso reads recipients by envelope.
   */
  envelopeIdsOfRecipients?: (db: DbOrTx, engineRecipientIds: string[]) => Promise<string[]>;
  log?: { warn(obj: Record<string, unknown>, msg: string): void };
  /** How many recipients' links are kept in memory (tokens never change in Documenso). */
  linkCacheSize?: number;
};

type StagedDocumensoDocument = StagedDocument & { created: CreatedDocument };

export type DocumensoEngine = SigningEngine & {
  /** The recipients' signing links by engine recipient id (the envelope service's signingUrlsOf). */
  linksOf(db: DbOrTx, engineRecipientIds: string[]): Promise<Map<string, string>>;
  /** The client's circuit: closed, open or half-open (for /health). */
  readonly circuit: string;
};

export function createDocumensoEngine(deps: DocumensoEngineDeps): DocumensoEngine {
  const { client } = deps;
  const origin = deps.webappUrl.replace(/\/+$/, '');
  const signingUrl = (token: string) => `${origin}/sign/${token}`;
  const maxLinks = deps.linkCacheSize ?? 50_000;
  const links = new Map<string, string>();

  /** Remembers every recipient's link the envelope carries; the oldest are forgotten past the cap. */
  function remember(e: ops.EnvelopeGetResponse): void {
    for (const r of e.recipients) {
      links.delete(String(r.id));
      links.set(String(r.id), signingUrl(r.token));
    }
    while (links.size > maxLinks) links.delete(links.keys().next().value!);
  }

  async function read(engineEnvelopeId: string): Promise<ops.EnvelopeGetResponse> {
    const e = await client.getEnvelope(engineEnvelopeId);
    if (!e) throw new AppError('DOCUMENSO_UNAVAILABLE', 'Documenso has no such envelope (deleted there)');
    remember(e);
    return e;
  }

  /** Create answers only the id: the recipients' ids and tokens and the fields' ids are read back. */
  async function readBack(id: string, input: CreateDocumentInput): Promise<CreatedDocument> {
    const e = await read(id);
    const byEmail = new Map(e.recipients.map((r) => [r.email.toLowerCase(), r]));
    const recipientOf = (email: string) => {
      const r = byEmail.get(email.toLowerCase());
      if (!r) throw new AppError('DOCUMENSO_UNAVAILABLE', `Documenso's envelope lacks the recipient ${email}`);
      return r;
    };
    const fieldIds = matchFields(input.fields, (email) => recipientOf(email).id, e.fields);
    return {
      engineEnvelopeId: id,
      engineNumericId: numericIdOf(e),
      recipients: input.recipients.map((r) => {
        const remote = recipientOf(r.email);
        return { email: r.email, engineRecipientId: String(remote.id), signingUrl: signingUrl(remote.token) };
      }),
      fields: input.fields.map((f, i) => ({ engineFieldId: fieldIds[i], recipientEmail: f.recipientEmail })),
    };
  }

  /** Marks an envelope as ended by Signet (MARK); Documenso's own state is left as it is. */
  const mark = (envelopeId: string, externalId: string) => client.updateEnvelope({ envelopeId, data: { externalId } });

  const engine: DocumensoEngine = {
    remote: true,

    get circuit() {
      return client.circuit;
    },

    async stageDocument(input: CreateDocumentInput): Promise<StagedDocumensoDocument> {
      refuseRules(input.fields);
      // The request's upload is streamed from its file; a template's document is in memory.
      const file = 'file' in input.document ? await openAsBlob(input.document.file, { type: 'application/pdf' }) : input.document.bytes;
      const request = createRequest(input, file);
      const { id } = await client.createEnvelope(request);
      try {
        return { engineEnvelopeId: id, created: await readBack(id, input) };
      } catch (err) {
        // Nothing holds the draft yet: it goes, as after a failed transaction.
        await engine.discardStaged({ engineEnvelopeId: id });
        throw err;
      }
    },

    async createDocument(_tx, staged) {
      return (staged as StagedDocumensoDocument).created;
    },

    async discardStaged(staged) {
      try {
        await client.deleteEnvelope(staged.engineEnvelopeId);
      } catch (err) {
        // Best effort: a draft left behind holds no signature and sends nothing.
        deps.log?.warn({ engineEnvelopeId: staged.engineEnvelopeId, code: (err as AppError).code }, 'documenso: a staged envelope could not be deleted');
      }
    },

    async addFields(_tx, engineEnvelopeId, fields: EngineFieldInput[]) {
      refuseFileFields(fields);
      refuseRules(fields);
      const e = await read(engineEnvelopeId);
      if (e.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', 'Fields can be added only while the envelope is a DRAFT');
      const byEmail = new Map(e.recipients.map((r) => [r.email.toLowerCase(), r.id]));
      const data = fields.map((f) => {
        const recipientId = byEmail.get(f.recipientEmail.toLowerCase());
        if (recipientId === undefined) throw new AppError('RECIPIENT_NOT_FOUND', `No recipient ${f.recipientEmail} on this envelope`);
        return { type: f.type, recipientId, ...positionOf(f), fieldMeta: fieldMetaOf(f) } as ops.EnvelopeFieldCreateManyRequest['data'][number];
      });
      const made = await client.createFields({ envelopeId: engineEnvelopeId, data });
      // Answered in the order asked (createEnvelopeFields maps its input).
      return made.map((m, i) => ({ engineFieldId: m.id, recipientEmail: fields[i].recipientEmail }));
    },

    async removeField(_tx, engineEnvelopeId, engineFieldId) {
      // Field ids are Documenso-wide: one not on this envelope is not this caller's to delete.
      const e = await read(engineEnvelopeId);
      if (!e.fields.some((f) => f.id === engineFieldId)) return false;
      if (e.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', 'Fields can be removed only while the envelope is a DRAFT');
      return client.deleteField(engineFieldId);
    },

    async send(_tx, engineEnvelopeId, opts = {}) {
      const e = await read(engineEnvelopeId);
      // Already distributed (a retry after a commit that failed, or a job run twice): its work is done.
      if (e.status !== 'DRAFT') return;
      if (e.externalId === MARK.cancelled || e.externalId === MARK.expired) throw new AppError('SEND_FAILED', 'The envelope was ended; it cannot be sent');
      const { subject, message, redirectUrl } = opts.meta ?? {};
      // A test send reaches no real mailbox (NONE: Documenso sends nothing; the links work). Without
      // `testSend` the mode chosen at create stands (createRequest).
      const method = opts.testSend === undefined ? {} : { distributionMethod: opts.testSend ? ('NONE' as const) : ('EMAIL' as const) };
      await client.distribute({ envelopeId: engineEnvelopeId, meta: { ...(subject ? { subject } : {}), ...(message ? { message } : {}), ...(redirectUrl ? { redirectUrl } : {}), ...method } });
    },

    async resend(_tx, engineEnvelopeId) {
      const e = await read(engineEnvelopeId);
      if (e.status !== 'PENDING') return [];
      const turn = currentTurn(e);
      if (turn.length === 0) return [];
      await client.redistribute({ envelopeId: engineEnvelopeId, recipients: turn.map((r) => r.id) });
      return turn.map((r) => ({ name: r.name, email: r.email }));
    },

    async cancel(_tx, engineEnvelopeId) {
      const e = await read(engineEnvelopeId);
      if (e.status === 'COMPLETED') throw new AppError('CANNOT_DELETE_COMPLETED', 'A completed envelope cannot be deleted');
      // Marked first: a mark explains only a draft or an ended envelope (documenso-map.ts), so a cancel
      // that fails after it leaves the envelope read as it was, and the transaction's retry does both again.
      if (e.externalId !== MARK.cancelled) await mark(engineEnvelopeId, MARK.cancelled);
      if (e.status === 'PENDING') await client.cancel(engineEnvelopeId, 'Cancelled through Signet');
    },

    async expire(_tx, engineEnvelopeId) {
      const e = await read(engineEnvelopeId);
      // As the local engine: only what still waits for signatures expires.
      if (e.status !== 'DRAFT' && e.status !== 'PENDING') return;
      if (e.externalId !== MARK.expired) await mark(engineEnvelopeId, MARK.expired);
      // Documenso has no envelope expiry (RECIPIENT_EXPIRED leaves it PENDING): Signet's window is ended by a cancel.
      if (e.status === 'PENDING') await client.cancel(engineEnvelopeId, 'The signing window passed');
    },

    async status(_db, engineEnvelopeId): Promise<EngineStatus> {
      return engineStatus(await read(engineEnvelopeId), signingUrl);
    },

    async signedPdf(_tx, engineEnvelopeId) {
      const e = await read(engineEnvelopeId);
      // Before completion Documenso serves the original under version=signed.
      if (e.status !== 'COMPLETED') throw new AppError('DOWNLOAD_FAILED', `Documenso's envelope is ${e.status}; the signed PDF exists once it is COMPLETED`);
      return client.download(itemOf(e), 'signed');
    },

    async originalPdf(_tx, engineEnvelopeId) {
      return client.download(itemOf(await read(engineEnvelopeId)), 'original');
    },

    async purge(_tx, engineEnvelopeId) {
      await client.deleteEnvelope(engineEnvelopeId);
    },

    async linksOf(db, engineRecipientIds) {
      const missing = engineRecipientIds.filter((id) => !links.has(id));
      if (missing.length && deps.envelopeIdsOfRecipients) {
        for (const envelopeId of await deps.envelopeIdsOfRecipients(db, missing)) {
          // The stored copy stays readable while Documenso is down: its links are then left empty.
          const e = await client.getEnvelope(envelopeId).catch((err: unknown) => {
            if (!(err instanceof AppError)) throw err;
            deps.log?.warn({ engineEnvelopeId: envelopeId, code: err.code }, 'documenso: links not read');
            return null;
          });
          if (e) remember(e);
        }
      }
      // A link Documenso no longer has (the envelope deleted there) or could not give is answered empty, not guessed.
      return new Map(engineRecipientIds.map((id) => [id, links.get(id) ?? '']));
    },
  };
  return engine;
}

function itemOf(e: ops.EnvelopeGetResponse): string {
  const item = [...e.envelopeItems].sort((a, b) => a.order - b.order)[0];
  if (!item) throw new AppError('DOWNLOAD_FAILED', "Documenso's envelope holds no document");
  return item.id;
}

/**
 * Documenso keeps none of Signet's field rules (conditions, validation, sender's values, labels): a
 * field that carries them is refused before anything is created there, never quietly sent without them.
 */
function refuseRules(fields: EngineFieldInput[]): void {
  const named = [...new Set(fields.flatMap((f) => (hasRules(f.rules) ? Object.keys(f.rules!).filter((k) => k !== 'ref') : [])))];
  if (named.length) throw new AppError('NOT_SUPPORTED_BY_ENGINE', `SIGNING_ENGINE=documenso cannot enforce field rules (${named.join(', ')}); send the fields without them or use the local engine`, { feature: 'field rules' });
}
