import { ConfigError } from './config-error.js';

/** The sealing-certificate variables as config.ts validated them. */
export type CertEnv = { SIGNING_CERT_P12_PATH?: string; SIGNING_CERT_ALLOW_SELF_SIGNED: boolean };

/**
 * SIGNING_CERT_ALLOW_SELF_SIGNED: seal with a self-signed operator certificate (a company's own key
 * that its readers were told to trust). Without a P12 it would mean nothing: the development seal is
 * self-signed and always allowed, so setting it alone is refused as a mistake.
 */
export function signingCertAllowSelfSigned(e: CertEnv): boolean {
  if (e.SIGNING_CERT_ALLOW_SELF_SIGNED && !e.SIGNING_CERT_P12_PATH) throw new ConfigError('Invalid configuration: SIGNING_CERT_ALLOW_SELF_SIGNED: requires SIGNING_CERT_P12_PATH');
  return e.SIGNING_CERT_ALLOW_SELF_SIGNED;
}
