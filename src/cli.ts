import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';

const USAGE = `Usage: signet <command>

  serve                      HTTP API (and the job worker unless WORKER_ENABLED=false)
  worker                     the job worker only
  migrate                    apply database migrations and exit
  ops <resource> <action>    call the operator API (SIGNET_URL, default PUBLIC_URL; OPS_TOKEN or DATA_DIR/ops-token)
    ops customers create --email E --name N [--credit-cents C]
    ops customers get <customerId>
    ops credits add <customerId> --amount-cents C --reason R [--idempotency-key K]
    ops api-keys create <customerId> [--mode live|test]
    ops api-keys revoke <customerId> <keyId>
    ops audit [--customer-id ID] [--limit N] [--offset N]
    ops alerts [--limit N] [--offset N]`;

async function ops(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      name: { type: 'string' },
      'credit-cents': { type: 'string' },
      'amount-cents': { type: 'string' },
      reason: { type: 'string' },
      mode: { type: 'string' },
      'customer-id': { type: 'string' },
      limit: { type: 'string' },
      offset: { type: 'string' },
      'idempotency-key': { type: 'string' },
    },
  });
  const config = loadConfig();
  const base = (process.env.SIGNET_URL ?? config.publicUrl).replace(/\/+$/, '');
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const query = (q: Record<string, string | undefined>) => {
    const s = new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined)).toString();
    return s ? `?${s}` : '';
  };
  const [resource, action, a1, a2] = positionals;
  const route = ((): { method: string; path: string; body?: unknown; idempotencyKey?: string } | undefined => {
    switch (`${resource} ${action ?? ''}`.trim()) {
      case 'customers create':
        return { method: 'POST', path: '/ops/customers', body: { email: values.email, name: values.name, creditCents: num(values['credit-cents']) } };
      case 'customers get':
        return { method: 'GET', path: `/ops/customers/${a1}` };
      case 'credits add':
        // A grant needs an Idempotency-Key; pass the same --idempotency-key to retry one safely.
        return { method: 'POST', path: `/ops/customers/${a1}/credits`, body: { amountCents: num(values['amount-cents']), reason: values.reason }, idempotencyKey: values['idempotency-key'] ?? randomUUID() };
      case 'api-keys create':
        return { method: 'POST', path: `/ops/customers/${a1}/api-keys`, body: { mode: values.mode ?? 'live' } };
      case 'api-keys revoke':
        return { method: 'DELETE', path: `/ops/customers/${a1}/api-keys/${a2}` };
    }
    if (resource === 'audit') return { method: 'GET', path: `/ops/audit${query({ customerId: values['customer-id'], limit: values.limit, offset: values.offset })}` };
    if (resource === 'alerts') return { method: 'GET', path: `/ops/alerts${query({ limit: values.limit, offset: values.offset })}` };
    return undefined;
  })();
  if (!route) {
    console.error(USAGE);
    process.exit(2);
  }
  const res = await fetch(base + route.path, {
    method: route.method,
    headers: {
      authorization: `Bearer ${config.opsToken}`,
      ...(route.body ? { 'content-type': 'application/json' } : {}),
      ...(route.idempotencyKey ? { 'idempotency-key': route.idempotencyKey } : {}),
    },
    body: route.body ? JSON.stringify(route.body) : undefined,
  });
  const text = await res.text();
  try {
    console.log(JSON.stringify(JSON.parse(text), null, 2));
  } catch {
    console.log(text);
  }
  if (!res.ok) process.exit(1);
}

/** The server's modules load only for the commands that run it: `ops` and `--help` answer at once. */
const server = () => {
  boundYoungGeneration();
  return import('./main.js');
};

/** V8's semi-space bound for `serve`, `worker` and `migrate` (MiB each; the young generation is two of them). */
export const SEMI_SPACE_MB = 8;

/**
 * V8 flags a server process starts with, each unless given on node's command line (or, where Node
 * allows it there, in NODE_OPTIONS): the semi-space bound above, and one background thread to
 * recompile PGlite's hot WebAssembly with V8's optimizing compiler instead of one per core. Those
 * recompilations run side by side at start, each allocating tens of MiB it frees, which then stay in
 * malloc's arenas (a first start on PGlite held some 25 MiB more with them); one at a time, the same
 * functions are optimized, later (docs/operating.md: Memory).
 */
export const V8_FLAGS: ReadonlyArray<{ name: string; value: string }> = [
  { name: 'max-semi-space-size', value: String(SEMI_SPACE_MB) },
  { name: 'wasm-num-compilation-tasks', value: '1' },
];

/**
 * glibc's malloc settings for a server process, each set unless the operator set it: 2 arenas (its
 * default is 8 per core, each holding freed memory apart), and a fixed 32 KiB threshold at and above
 * which a block is its own mapping, returned to the system when freed. glibc's default raises that
 * threshold up to 32 MiB as big blocks are freed, after which big blocks come from the heap, which
 * gives back only its top. 32 KiB is the size of a segment of V8's compiler zones: the optimizing
 * compiler allocates hundreds of MiB of them while it recompiles PGlite's hot WebAssembly and frees
 * them, and from an arena they left some 20 MiB resident for good (docs/operating.md: Memory).
 */
export const MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: String(32 * 1024) };

/**
 * Node.js 24 sizes V8's young generation from the machine's memory: up to 64 MiB semi-spaces, which a
 * server fills while it loads and keeps committed at idle (some 80 MiB of RSS on the main thread
 * alone). Node 20 used 16 MiB; 8 holds some 20 MiB less again, at no CPU per request we could
 * measure (docs/operating.md: Memory). V8's flags must be set when the process starts, so a server
 * process started without V8_FLAGS replaces itself (execve: same pid, same stdio, nothing left behind)
 * with `node <the missing flags> <same arguments>`, before any module of the server loads, and with
 * MALLOC_ENV's variables where unset (glibc reads them at start). An operator's own flags (on node's
 * command line or in NODE_OPTIONS) and malloc variables are kept as given; with all set nothing is
 * replaced (docs/operating.md: Memory).
 */
function boundYoungGeneration(): void {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  const given = (name: string) => flags.some((f) => new RegExp(`^--${name.replaceAll('-', '[-_]')}\\b`).test(f));
  const node = V8_FLAGS.filter((f) => !given(f.name)).map((f) => `--${f.name}=${f.value}`);
  const mallocUnset = process.platform === 'linux' ? Object.entries(MALLOC_ENV).filter(([k]) => process.env[k] === undefined) : [];
  // Windows has no execve: the server runs with Node's defaults there.
  if ((node.length === 0 && mallocUnset.length === 0) || typeof process.execve !== 'function') return;
  const env = mallocUnset.length ? { ...process.env, ...Object.fromEntries(mallocUnset) } : process.env;
  process.execve(process.execPath, [process.execPath, ...node, ...process.execArgv, ...process.argv.slice(1)], env);
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  switch (command) {
    case 'serve':
    case undefined:
      await (await server()).serve();
      return;
    case 'worker':
      await (await server()).work();
      return;
    case 'migrate':
      await (await server()).migrate();
      return;
    case 'ops':
      await ops(rest);
      return;
    case '-h':
    case '--help':
    case 'help':
      console.log(USAGE);
      return;
    default:
      console.error(`signet: unknown command "${command}"\n\n${USAGE}`);
      process.exit(2);
  }
}

main().catch((err) => {
  if (err instanceof ConfigError) console.error(err.message);
  else if (err?.cause?.code === 'ECONNREFUSED') console.error(`signet: cannot reach the server (${err.cause.address}:${err.cause.port}); is it running?`);
  else console.error(err);
  process.exit(1);
});
