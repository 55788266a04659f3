// Builds the app in-process on a throwaway in-memory database and prints its /openapi.json:
// the same document a running server serves, with no port and no data directory left behind.
import { createTestApp } from '../../test/harness.js';

export async function dumpOpenApi(): Promise<Record<string, unknown>> {
  const t = await createTestApp();
  try {
    return (await t.app.inject({ url: '/openapi.json' })).json();
  } finally {
    await t.close();
  }
}
