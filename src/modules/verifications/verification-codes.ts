import { randomUUID } from 'node:crypto';
import type { OperatorContext, RequestContext } from '../../context.js';
import type { DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { enqueue } from '../../jobs/queue.js';
import { CODE_PATTERN, CODE_TTL_MS, maskEmail, type EmailCodeIdentity } from '../../providers/identity/index.js';
import type { EmailMessage } from '../../providers/email/index.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from '../billing/billing.service.js';
import { SEND_CODE_JOB } from './verifications.jobs.js';
import { resolveLocale } from '../../i18n/locales.js';
import type { VerificationRow, VerificationStatus, VerificationsRepo } from './verifications.repo.js';

/** The fifth wrong code fails the verification; the count spans every code sent for it. */
export const MAX_WRONG_CODES = 5;
/**
 * The wait before the next code, by codes already sent: 30 s, 1 min, 5 min, 15 min, then 1 h each.
 * At most 5 codes in the first hour and one an hour after that, so a verification cannot be used to
 * flood a mailbox, while a person who lost a code gets another at once.
 */
const RESEND_WAITS_MS = [30_000, 60_000, 5 * 60_000, 15 * 60_000, 60 * 60_000];
export const nextCodeWaitMs = (codesSent: number) => (codesSent === 0 ? 0 : RESEND_WAITS_MS[Math.min(codesSent, RESEND_WAITS_MS.length) - 1]);

/** The status callers see: a pending row past expiresAt is expired, whether or not the sweep wrote it yet. */
export const effectiveStatus = (row: VerificationRow, now: Date): VerificationStatus =>
  row.status === 'pending' && row.expiresAt.getTime() <= now.getTime() ? 'expired' : row.status;

export const attemptsLeft = (row: VerificationRow) => (row.provider === 'email' ? Math.max(0, MAX_WRONG_CODES - row.failedAttempts) : null);

/** A free verification was a test one: its code goes to the outbox, never to a real mailbox. */
export const isTestSend = (row: VerificationRow) => row.mode === 'test' || row.chargedMicros === 0n;

/** Refuses anything but a pending, unexpired email verification, with the code that says why. */
export function assertOpen(row: VerificationRow, now: Date): void {
  const status = effectiveStatus(row, now);
  if (status === 'failed') throw new AppError('VERIFICATION_FAILED', 'Too many wrong codes: this verification failed', { status, attemptsLeft: 0 });
  if (status === 'expired') throw new AppError('VERIFICATION_EXPIRED', 'This verification expired', { status, expiresAt: row.expiresAt.toISOString() });
  if (status !== 'pending') throw new AppError('VERIFICATION_NOT_PENDING', `This verification is ${status} already`, { status });
}

export type CodeSent = { sentTo: string; expiresAt: string; retryAfterSeconds: number };
export type CodeChecked = { verified: boolean; verifiedAt: Date | null; attemptsLeft: number };

export type CodesDeps = {
  repo: VerificationsRepo;
  email: EmailCodeIdentity;
  billing: Pick<BillingService, 'charge'>;
  audit: Pick<AuditService, 'customer' | 'operator'>;
  now: () => Date;
};

const SYSTEM: OperatorContext = { actorType: 'system', requestId: null, ip: null };

/**
 * The emailed-code rules, one implementation for the /verify page and for gated signing recipients
 * (whose signing page asks for the code). Each function runs in the caller's transaction on a row it
 * locks (FOR UPDATE), so concurrent confirms are counted one after another and cannot exceed five.
 * A wrong code is an answer, not an error: the attempt it counts must commit with the transaction.
 */
export function createVerificationCodes(deps: CodesDeps) {
  const { repo, email } = deps;
  const record = (tx: DbOrTx, row: VerificationRow, action: string, op: OperatorContext, metadata?: Record<string, unknown>) =>
    deps.audit.operator(tx, op, { customerId: row.customerId, action, resourceType: 'verification', resourceId: row.id, metadata: { mode: row.mode, ...metadata } });

  async function requestCode(tx: Tx, row: VerificationRow, op: OperatorContext = SYSTEM): Promise<CodeSent> {
    const now = deps.now();
    if (row.provider !== 'email') throw new AppError('VERIFICATION_NOT_PENDING', 'Codes are for email verifications only', { status: row.status });
    assertOpen(row, now);
    const wait = nextCodeWaitMs(row.codesSent);
    const readyAt = (row.lastCodeSentAt?.getTime() ?? 0) + wait;
    if (readyAt > now.getTime()) {
      const seconds = Math.ceil((readyAt - now.getTime()) / 1000);
      throw new AppError('CODE_RATE_LIMITED', `A code was sent recently; ask for another in ${seconds} seconds`, { retryAfterSeconds: seconds }, { 'Retry-After': String(seconds) });
    }
    const code = email.newCode();
    const codeExpiresAt = new Date(now.getTime() + CODE_TTL_MS);
    // The new hash replaces the old: one code is live at a time.
    await repo.update(tx, row.id, { codeHash: email.codeHash(row.id, code), codeExpiresAt, codesSent: row.codesSent + 1, lastCodeSentAt: now });
    await enqueue(tx, { type: SEND_CODE_JOB, payload: { verificationId: row.id, sealedCode: email.seal(code, row.id) }, maxAttempts: 5 });
    await record(tx, row, 'verification.code_sent', op, { codesSent: row.codesSent + 1 });
    return { sentTo: maskEmail(row.email), expiresAt: codeExpiresAt.toISOString(), retryAfterSeconds: Math.ceil(nextCodeWaitMs(row.codesSent + 1) / 1000) };
  }

  async function confirmCode(tx: Tx, row: VerificationRow, rawCode: string, op: OperatorContext = SYSTEM): Promise<CodeChecked> {
    const now = deps.now();
    const code = rawCode.replace(/[\s-]/g, '');
    if (!CODE_PATTERN.test(code)) throw new AppError('VALIDATION_ERROR', 'The code is 6 digits', { details: [{ path: 'body.code', message: 'the code is 6 digits' }] });
    if (row.status === 'verified') return { verified: true, verifiedAt: row.verifiedAt, attemptsLeft: attemptsLeft(row) ?? 0 };
    assertOpen(row, now);
    // No live code, no guess: an attempt counts only when a right answer was possible.
    if (!row.codeHash || !row.codeExpiresAt || row.codeExpiresAt.getTime() <= now.getTime()) {
      throw new AppError('CODE_EXPIRED', 'No code is live for this verification; ask for a new one');
    }
    if (email.codeMatches(row.codeHash, row.id, code)) {
      const done = await repo.update(tx, row.id, { status: 'verified', verifiedAt: now, codeHash: null, codeExpiresAt: null, failureReason: null });
      await record(tx, row, 'verification.verified', op);
      return { verified: true, verifiedAt: done.verifiedAt, attemptsLeft: attemptsLeft(done) ?? 0 };
    }
    const wrong = row.failedAttempts + 1;
    const failed = wrong >= MAX_WRONG_CODES;
    await repo.update(tx, row.id, { failedAttempts: wrong, ...(failed ? { status: 'failed', failureReason: 'too_many_wrong_codes', codeHash: null, codeExpiresAt: null } : {}) });
    await record(tx, row, failed ? 'verification.failed' : 'verification.code_wrong', op, { failedAttempts: wrong });
    return { verified: false, verifiedAt: null, attemptsLeft: MAX_WRONG_CODES - wrong };
  }

  async function requireRecipient(tx: DbOrTx, engineRecipientId: string, lock: boolean): Promise<VerificationRow> {
    const row = await repo.findByRecipient(tx, engineRecipientId, lock);
    if (!row) throw new AppError('VERIFICATION_NOT_FOUND', 'This recipient has no verification');
    return row;
  }

  return {
    requestCode,
    confirmCode,

    /**
     * A gated signing recipient's email verification, created and charged (USD 0.50) in the envelope's
     * transaction, under its Idempotency-Key. It has no /verify link: the signing page asks for the code.
     */
    async createForRecipient(
      tx: Tx,
      ctx: RequestContext,
      input: { envelopeId: string; engineRecipientId: string; email: string; name: string; expiresAt: Date },
    ): Promise<{ verificationId: string }> {
      // The lead's rule: one x402 payment covers exactly one price, the envelope's.
      if (ctx.actor.payment) throw new AppError('X402_NOT_APPLICABLE', 'verification-gated recipients cannot be paid per call with x402: one payment covers one price; use a balance');
      const id = randomUUID();
      const charge = await deps.billing.charge(tx, {
        actor: ctx.actor,
        operation: 'verification_create',
        testModeHeader: ctx.testModeHeader,
        envelopeId: input.envelopeId,
        description: `Email verification of a signing recipient (${input.email})`,
      });
      await repo.insert(tx, {
        id,
        customerId: ctx.actor.customerId,
        mode: ctx.actor.mode,
        type: 'email',
        email: input.email,
        name: input.name,
        provider: 'email',
        envelopeId: input.envelopeId,
        engineRecipientId: input.engineRecipientId,
        chargedMicros: charge.sandbox ? 0n : charge.amountMicros,
        expiresAt: input.expiresAt,
      });
      await deps.audit.customer(tx, ctx, { action: 'verification.create', resourceType: 'verification', resourceId: id, metadata: { type: 'email', envelopeId: input.envelopeId } });
      return { verificationId: id };
    },

    /** Emails the recipient a new code (same rules and rate limit as the /verify page). */
    async requestRecipientCode(tx: Tx, engineRecipientId: string): Promise<CodeSent> {
      return requestCode(tx, await requireRecipient(tx, engineRecipientId, true));
    },

    /** Checks a code: a wrong one is answered (attemptsLeft), the fifth fails the verification; throws when it is failed, expired or canceled. */
    async confirmRecipientCode(tx: Tx, engineRecipientId: string, code: string): Promise<CodeChecked> {
      return confirmCode(tx, await requireRecipient(tx, engineRecipientId, true), code);
    },

    /** The recipient's verification row, if it has one. */
    async recipientVerification(db: DbOrTx, engineRecipientId: string): Promise<VerificationRow | undefined> {
      return repo.findByRecipient(db, engineRecipientId);
    },

    /**
     * The send-code job: mails the code it carries only while it is still the live one (not replaced,
     * not expired, the verification still pending), so a late or repeated run sends nothing stale.
     */
    async codeMessage(db: DbOrTx, verificationId: string, sealedCode: string): Promise<{ message: EmailMessage; testSend: boolean } | undefined> {
      const row = await repo.findById(db, verificationId);
      if (!row || row.status !== 'pending' || !row.codeHash || !row.codeExpiresAt || row.codeExpiresAt.getTime() <= deps.now().getTime()) return undefined;
      const code = email.unseal(sealedCode, row.id);
      if (!email.codeMatches(row.codeHash, row.id, code)) return undefined;
      const testSend = isTestSend(row);
      const reader = await repo.readerLocale(db, row);
      const locale = resolveLocale(reader.recipient, reader.account);
      return { message: email.codeEmail({ email: row.email, name: row.name }, code, row.engineRecipientId !== null, testSend, locale), testSend };
    },
  };
}

export type VerificationCodes = ReturnType<typeof createVerificationCodes>;
