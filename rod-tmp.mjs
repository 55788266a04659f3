import { rodata } from '/tmp/rod.mjs';
rodata('start');
for (const m of process.argv.slice(2)) { await import(m); rodata(m); }
