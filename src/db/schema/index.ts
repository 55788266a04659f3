export * from './customers.js';
export * from './billing.js';
export * from './idempotency.js';
export * from './audit.js';
export * from './jobs.js';
export * from './engine.js';
export * from './envelopes.js';
export * from './webhooks.js';
