import type { Config } from './config.js';
import type { Container } from './container.js';
import { createEmbedRepo } from './modules/embed/embed.repo.js';
import { createEmbedService } from './modules/embed/embed.service.js';
import { createEnvelopesRepo } from './modules/envelopes/envelopes.repo.js';

/** Embedded signing's wiring (container.ts is near its size limit): the local engine's links, or none with a remote engine. */
export function createEmbed(c: Pick<Container, 'db' | 'local' | 'engine' | 'services'>, config: Pick<Config, 'signingLinkSecret' | 'publicUrl'>) {
  return createEmbedService({
    db: c.db,
    repo: createEmbedRepo(),
    envelopes: createEnvelopesRepo(),
    signingUrlsOf: c.engine.name === 'local' ? c.local.linksOf : undefined,
    audit: c.services.audit,
    secret: config.signingLinkSecret,
    publicUrl: config.publicUrl,
  });
}
