import v8 from 'node:v8';
const show = (l) => { const m = process.memoryUsage(); const h = v8.getHeapStatistics(); console.log(l.padEnd(14), 'rss', (m.rss/1048576).toFixed(1), 'heapTotal', (m.heapTotal/1048576).toFixed(1), 'heapUsed', (m.heapUsed/1048576).toFixed(1), 'ext', (m.external/1048576).toFixed(1), 'malloced', (h.malloced_memory/1048576).toFixed(1), 'peakMalloc', (h.peak_malloced_memory/1048576).toFixed(1)); };
await import('pg'); show('pg');
await import('drizzle-orm'); show('drizzle-orm');
globalThis.gc(); show('after gc');
