import { Readable } from 'node:stream';
import type { DbOrTx, Tx } from '../db/client.js';
import type { envelopeRecipients, envelopes } from '../db/schema/index.js';
import type { FieldType, Placement, PreparedDocument } from '../pdf/types.js';
import type { PlannedRules } from './field-rules.js';

export const ENVELOPE_STATUSES = ['DRAFT', 'PENDING', 'SENT', 'PARTIALLY_SIGNED', 'COMPLETED', 'REJECTED', 'EXPIRED', 'CANCELLED'] as const;
export type EnvelopeStatus = (typeof ENVELOPE_STATUSES)[number];
export const TERMINAL_STATUSES: readonly EnvelopeStatus[] = ['COMPLETED', 'REJECTED', 'EXPIRED', 'CANCELLED'];

export const ROLES = ['SIGNER', 'APPROVER', 'VIEWER', 'CC', 'ASSISTANT'] as const;
export type Role = (typeof ROLES)[number];

/** Automatic reminders: the first `firstAfterDays` after the invitation, then every `everyDays`, `max` in all. */
export type ReminderSchedule = { firstAfterDays: number; everyDays: number; max: number };

/** An automatic reminder or expiry warning an engine emailed (and recorded in its own trail). */
export type SentReminder = { engineRecipientId: string; email: string; name: string; kind: 'reminder' | 'expiry_warning' };

export type EngineMeta = { subject?: string; message?: string; redirectUrl?: string };

/** A document read as a stream of `size` bytes (what a download sends as Content-Length). */
export type DocumentStream = { stream: Readable; size: number };

/** Bytes already in memory, as a DocumentStream. */
export const documentStreamOf = (bytes: Uint8Array): DocumentStream => ({ stream: Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]), size: bytes.byteLength });

export type EngineRecipientInput = {
  position: number;
  email: string;
  name: string;
  role: Role;
  signingOrder: number | null;
  /** The recipient must confirm an emailed code before the document is shown or can be acted on. */
  verificationRequired?: boolean;
  /** The language the recipient is addressed in (src/i18n/locales.ts); null: the account's default. */
  locale?: string | null;
};

export type EngineFieldInput = Placement & {
  recipientEmail: string;
  type: FieldType;
  required: boolean;
  options: string[] | null;
  /** The marker box to cover when sealing (marker-placed fields). */
  hide: Placement | null;
  /** Label, validation, the sender's value, the condition (field-rules.ts); an engine that keeps none refuses them. */
  rules?: PlannedRules | null;
};

export type EngineRecipientStatus = {
  engineRecipientId: string;
  email: string;
  /** PENDING | SIGNED | REJECTED */
  status: string;
  readStatus: 'NOT_OPENED' | 'OPENED';
  sendStatus: 'NOT_SENT' | 'SENT';
  viewedAt: Date | null;
  signedAt: Date | null;
  rejectedAt: Date | null;
  rejectionReason: string | null;
  /** When the recipient agreed to electronic records and signatures; undefined from an engine that keeps its own consent (Documenso). */
  consentedAt?: Date | null;
  /** The recipient's signing link, when the engine has it at hand with the status (it saves a read of the links). */
  signingUrl?: string;
};

/** A file a signer attached to a FILE field (issue 37), as the engine keeps it. */
export type EngineAttachment = { id: string; fieldId: number; recipientEmail: string; name: string; contentType: string; size: number; sha256: string; uploadedAt: Date };

export type EngineStatus = { status: EnvelopeStatus; completedAt: Date | null; recipients: EngineRecipientStatus[] };

/** The service's stored copy of an envelope (its row and its recipients' by position) with the engine's status, read together. */
export type CopyWithStatus = {
  /** What the status read needs of the row (no more is read): see StatusEnvelope in envelope-sync.ts. */
  envelope: Pick<typeof envelopes.$inferSelect, 'id' | 'engineEnvelopeId' | 'status' | 'title' | 'createdAt' | 'completedAt'>;
  recipients: (typeof envelopeRecipients.$inferSelect)[];
  status: EngineStatus;
};

export type CreatedDocument = {
  engineEnvelopeId: string;
  engineNumericId: string;
  recipients: { email: string; engineRecipientId: string; signingUrl: string }[];
  fields: { engineFieldId: number; recipientEmail: string }[];
};

/** Everything a create hands the engine. */
export type CreateDocumentInput = {
  document: PreparedDocument;
  title: string | null;
  recipients: EngineRecipientInput[];
  fields: EngineFieldInput[];
  meta: EngineMeta;
  /** The sending account's name, which the engine's own emails show as the sender (a remote engine may ignore it). */
  senderName?: string | null;
  /** What the recipients agree to before acting (electronic records and signatures), copied onto the document (a remote engine may ignore it). */
  consentText?: string;
  /** The account's accent (#rrggbb) for the engine's own emails, copied at create (a remote engine may ignore it). */
  brandColor?: string | null;
  /** The account's logo as its file under /brand/ (`<sha256>.png|jpg`), copied at create: what recipients see is what was set then. */
  logo?: string | null;
  /** The account's default language, copied at create: the language of its recipients who have none of their own, and of the certificate (a remote engine may ignore it). */
  defaultLocale?: string | null;
  /** embedded: the engine emails no invitation or reminder (the sender frames embed links instead). */
  delivery?: 'email' | 'embedded';
  /** Automatic reminders to whoever must act and has not (none when absent); only an engine with `sendDueReminders` takes them. */
  reminders?: ReminderSchedule | null;
  /** One warning, this many days before expiresAt, to whoever must still act (none when absent). */
  expiryWarningDays?: number | null;
  /** Recipients may hand the document to someone else from the signing page (delegation). */
  allowDelegation?: boolean;
  testSend: boolean;
  expiresAt: Date;
  draft: boolean;
};

/** Who takes a recipient's place, and who decided: the sender (reassignment) or the recipient (delegation). */
export type HandoverInput = { name: string; email: string; by: 'sender' | 'recipient'; reason?: string | null; client?: { ip: string; userAgent: string | null } };

/**
 * A create whose slow part is done (the document stored, links minted) and whose rows are still to be
 * written. Opaque to callers: only the engine that staged it reads it. An engine whose staging wrote a
 * file that no committed row ends up referencing leaves it to the sweep (DESIGN §4.14).
 */
export interface StagedDocument {
  readonly engineEnvelopeId: string;
}

/**
 * The boundary between the envelope service and whatever collects the signatures. The built-in
 * `local` engine implements it over its own tables; a remote engine (Documenso) would too. Methods
 * take the caller's transaction so an in-process engine commits with the state change; a remote
 * engine ignores it. Engine failures surface as AppErrors with the engine codes
 * (DOCUMENSO_UNAVAILABLE, SEND_FAILED, DOWNLOAD_FAILED, FIELD_CREATION_FAILED, DELETE_FAILED).
 */
export interface SigningEngine {
  /**
   * Its calls leave the process and no rollback undoes them (Documenso): the service then makes a
   * send the last call of its transaction, after the charge, and undoes a failed create's stage.
   */
  readonly remote?: boolean;
  /** A create's I/O, before its transaction opens (DESIGN §4.13): no row is locked while it runs. */
  stageDocument(input: CreateDocumentInput): Promise<StagedDocument>;
  /** A staged create's rows, in the caller's transaction; answers from what it wrote, reading nothing back. */
  createDocument(tx: Tx, staged: StagedDocument): Promise<CreatedDocument>;
  /**
   * Undoes a stage whose transaction did not commit (the service calls it; no committed row holds the
   * staged document). Best effort, never throws: a remote engine deletes what it created before the
   * transaction; the local engine does nothing (the blob sweep owns an unreferenced file).
   */
  discardStaged(staged: StagedDocument): Promise<void>;
  addFields(tx: Tx, engineEnvelopeId: string, fields: EngineFieldInput[]): Promise<{ engineFieldId: number; recipientEmail: string }[]>;
  /** False when the field does not exist on this document. */
  removeField(tx: Tx, engineEnvelopeId: string, engineFieldId: number): Promise<boolean>;
  /** Moves or resizes a draft's field; false when the field does not exist on this document. Absent when the engine cannot (Documenso). */
  updateField?(tx: Tx, engineEnvelopeId: string, engineFieldId: number, placement: Placement): Promise<boolean>;
  /**
   * Distributes: invitations go out (to the first in signing order); the document becomes SENT.
   * `testSend` (when given) decides, at send time, whether mail goes to the outbox only. A remote
   * engine is called with no transaction open (the pool), and must find its work done when repeated.
   * An engine that knows the status its send left (the local one, under its lock) answers it, so the
   * caller's sync need not read it again; a remote engine answers nothing.
   */
  send(tx: DbOrTx, engineEnvelopeId: string, opts?: { meta?: EngineMeta; testSend?: boolean }): Promise<EngineStatus | void>;
  /** Reminds every recipient who still has to act and may act now; returns whom. A remote engine is called with no transaction open. */
  resend(tx: DbOrTx, engineEnvelopeId: string): Promise<{ name: string; email: string }[]>;
  /**
   * Revokes one recipient's signing link and mints a new one; a recipient who was invited and still
   * has something to do is invited again, with the new link (`invited`). The caller has checked that
   * the envelope is live. Absent when the engine keeps the links itself (Documenso).
   */
  /**
   * The documents with an automatic reminder or expiry warning due now, at most `limit`. With
   * sendDueReminders; both absent when the engine sends no automatic reminders (Documenso).
   */
  dueReminders?(tx: Tx, limit: number): Promise<string[]>;
  /**
   * Claims and emails one document's due reminders and warnings (each claim a conditional UPDATE, so a
   * second run, or another node's, finds nothing due), in the caller's transaction, which holds the
   * envelope's lock. `defaultLocale`: the account's, for recipients with none of their own.
   */
  sendDueReminders?(tx: Tx, engineEnvelopeId: string, opts: { defaultLocale: string | null }): Promise<SentReminder[]>;
  reissueLink?(tx: Tx, engineEnvelopeId: string, engineRecipientId: string): Promise<{ signingUrl: string; invited: boolean }>;
  /**
   * Puts another person in one recipient's place (who has not acted): their fields follow the place,
   * the old link is revoked, consent and any email verification start over, and the new person is
   * invited when it is their turn (`invited`). Records the hand-over (the certificate lists it) unless
   * the document is a DRAFT, where it is a plain edit. Throws ALREADY_ACTED, RECIPIENT_EMAIL_TAKEN,
   * HANDOVER_LIMIT_REACHED. Absent when the engine cannot (Documenso).
   */
  replaceRecipient?(tx: Tx, engineEnvelopeId: string, engineRecipientId: string, to: HandoverInput): Promise<{ signingUrl: string; invited: boolean; from: { name: string; email: string } }>;
  /** A remote engine is called with no transaction open (a job), and must find its work done when repeated. */
  cancel(tx: DbOrTx, engineEnvelopeId: string): Promise<void>;
  /** A remote engine is called with no transaction open, and must find its work done when repeated. */
  expire(tx: DbOrTx, engineEnvelopeId: string): Promise<void>;
  /** Reads only: the pool will do, so a live status read needs no transaction of its own. */
  status(db: DbOrTx, engineEnvelopeId: string): Promise<EngineStatus>;
  /**
   * The stored copy of the owner's envelope `envelopeId` and status() of its document, in one read: an
   * engine whose rows sit beside the copy's (the local one) saves the live status read a round trip.
   * Undefined when the owner has no such envelope. Absent otherwise: the copy is read, then status().
   */
  statusWithCopy?(db: DbOrTx, envelopeId: string, owner: { customerId: string; mode: 'live' | 'test' }): Promise<CopyWithStatus | undefined>;
  /** Reads outside any transaction (the pool): the bytes come from a store, which may be the database itself or remote. */
  signedPdf(db: DbOrTx, engineEnvelopeId: string): Promise<Uint8Array>;
  originalPdf(db: DbOrTx, engineEnvelopeId: string): Promise<Uint8Array>;
  /**
   * The same documents as streams, for the download routes, so a download never holds the file. An
   * engine that cannot stream leaves it out; the routes then send signedPdf's or originalPdf's bytes.
   */
  openPdf?(db: DbOrTx, engineEnvelopeId: string, version: 'signed' | 'original'): Promise<DocumentStream>;
  /** Signers' attachments, oldest first. Absent when the engine has none (Documenso refuses FILE fields). */
  attachments?(db: DbOrTx, engineEnvelopeId: string): Promise<EngineAttachment[]>;
  /** One attachment's bytes as a stream, with its record; undefined when there is no such attachment or its file is gone. */
  openAttachment?(db: DbOrTx, engineEnvelopeId: string, attachmentId: string): Promise<(DocumentStream & { attachment: EngineAttachment }) | undefined>;
  /**
   * Deletes the documents (retention), or queues their deletion for after the commit; the envelope's
   * record stays. A remote engine is called with no transaction open.
   */
  purge(tx: DbOrTx, engineEnvelopeId: string): Promise<void>;
}
