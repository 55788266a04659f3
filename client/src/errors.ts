/** An error answered by Signet: `code` is the machine code to branch on (see the OpenAPI's error table). */
export class SignetError extends Error {
  override readonly name = 'SignetError';
  readonly status: number;
  readonly code: string;
  readonly details?: { path: string; message: string }[];
  readonly requestId?: string;
  /** The whole error body: some codes carry more (e.g. `retryAfterSeconds`, `required`). */
  readonly body?: Record<string, unknown>;
  constructor(
    status: number,
    code: string,
    message: string,
    details?: { path: string; message: string }[],
    requestId?: string,
    body?: Record<string, unknown>,
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.requestId = requestId;
    this.body = body;
  }

  static fromBody(status: number, body: unknown, requestId?: string): SignetError {
    const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const code = typeof b.code === 'string' ? b.code : `HTTP_${status}`;
    const message = typeof b.error === 'string' ? b.error : typeof body === 'string' && body ? body : `HTTP ${status}`;
    return new SignetError(status, code, message, b.details as SignetError['details'], (b.requestId as string | undefined) ?? requestId, b);
  }
}

/** A webhook delivery whose signature is missing, malformed, wrong or too old. */
export class SignetWebhookError extends Error {
  override readonly name = 'SignetWebhookError';
}
