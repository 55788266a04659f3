/** The baseline: what Fastify alone answers on this machine, one small JSON object. */
import Fastify from 'fastify';
import { exitOnSigterm } from './store.js';

const app = Fastify();
app.get('/bare', async () => ({ ok: true }));
const base = await app.listen({ port: 0, host: '127.0.0.1' });
exitOnSigterm(() => app.close());
console.log(`bare route listening on ${base}`);
