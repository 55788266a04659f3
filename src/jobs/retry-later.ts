/** Thrown by a job handler that has recorded its own failure and wants the next attempt at a set time. */
export class RetryLater extends Error {
  readonly retryInMs: number;
  constructor(
    retryInMs: number,
    message: string,
  ) {
    super(message);
    this.retryInMs = retryInMs;
    this.name = 'RetryLater';
  }
}
