/**
 * The peer comparison (issue 38, goal 5). No peer can run on this machine (there is no Documenso image
 * here, nor a way to fetch one), so `npm run bench` measures none: it prints the figures issue 38
 * quotes, labelled as quoted, with their caveats and their date. `npm run bench -- --peer` says so
 * first rather than pretending to measure.
 */
export const PEER_REQUESTED = process.argv.includes('--peer') || process.env.npm_config_peer === 'true';

export const QUOTED_PEER_LINES = [
  'Peers: QUOTED from issue 38, NOT measured by this run (no peer can run here: no Documenso image).',
  'Measured 2026-11 on a 2-core machine of this class, same PDF, two signers, 16 connections, in turns:',
  '  authenticated read of an envelope         Documenso 2.17: 80 req/s, p99 334 ms   Signet: 828 req/s, p99 35 ms    10.3x',
  '  create and send (Documenso: + distribute)  Documenso 2.17: 9 /s, p99 1.9 s        Signet: 141 /s, p99 234 ms     15.7x',
  '  server CPU per create, background email    Documenso 2.17: 111 ms                 Signet: 9.9 ms',
  '  idle / peak RSS                            Documenso 2.17: 390 / 905 MB           Signet: 255 / 480 MB',
  "  Caveat: Documenso ran Prisma's WASM query engine (its native one needs a download); with that engine's",
  '  whole cost removed Signet would still lead by about 6x (read) and 11x (create).',
];

if (PEER_REQUESTED) console.log('--peer: no peer can run on this machine (no Documenso image); the peer figures at the end are quoted, not measured.');
