import type { Config } from './config.js';
import type { Db } from './db/client.js';
import type { AuditService } from './modules/audit/audit.service.js';
import type { BillingService } from './modules/billing/billing.service.js';
import { bulkSendJob } from './modules/bulk-sends/bulk-sends.jobs.js';
import { createBulkSendsRepo } from './modules/bulk-sends/bulk-sends.repo.js';
import { createBulkSendsService } from './modules/bulk-sends/bulk-sends.service.js';
import type { TemplatesRepo } from './modules/templates/templates.repo.js';
import type { TemplatesService } from './modules/templates/templates.service.js';
import type { WebhooksService } from './modules/webhooks/webhooks.service.js';

/** Bulk sends' wiring (container.ts is near its size limit): the request side and the job that creates the envelopes. */
export function createBulkSends(
  c: { db: Db; templatesRepo: Pick<TemplatesRepo, 'find'>; templates: TemplatesService; billing: Pick<BillingService, 'assertAffordable'>; audit: AuditService; webhooks: Pick<WebhooksService, 'fanOutOptIn'> },
  config: Pick<Config, 'bulkSend' | 'envelopeExpiryDays' | 'storageExpiryDays'>,
) {
  const repo = createBulkSendsRepo();
  const publish = c.webhooks.fanOutOptIn;
  const service = createBulkSendsService({
    db: c.db,
    repo,
    templates: c.templatesRepo,
    billing: c.billing,
    audit: c.audit,
    publish,
    maxRows: config.bulkSend.maxRows,
    parallelJobs: config.bulkSend.parallelJobs,
    envelopeExpiryDays: config.envelopeExpiryDays,
    storageExpiryDays: config.storageExpiryDays,
  });
  return { service, repo, jobs: [bulkSendJob({ db: c.db, repo, templates: c.templates, publish })] };
}
