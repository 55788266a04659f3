/**
 * A small PDF content-stream lexer: enough to find every operator with its operands and the byte
 * range they occupy, so one operation can be replaced while every other byte is copied as it was.
 * Every step consumes at least one byte, so it ends on any input.
 */

export type Operand = number | boolean | null | { name: string } | { str: Uint8Array } | Operand[] | { dict: true };
export type Operation = { op: string; operands: Operand[]; start: number; end: number };

const WS = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const DELIM = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);
const isRegular = (b: number) => !WS.has(b) && !DELIM.has(b);

export function* operations(src: Uint8Array): Generator<Operation> {
  let pos = 0;
  const n = src.length;
  let operands: Operand[] = [];
  let opStart = -1;
  // Arrays being built: operands go to the innermost one.
  const arrays: Operand[][] = [];
  const push = (v: Operand) => (arrays.length ? arrays[arrays.length - 1].push(v) : operands.push(v));

  while (pos < n) {
    const b = src[pos];
    if (WS.has(b)) {
      pos++;
      continue;
    }
    if (b === 0x25 /* % */) {
      while (pos < n && src[pos] !== 0x0a && src[pos] !== 0x0d) pos++;
      continue;
    }
    if (opStart < 0) opStart = pos;
    if (b === 0x28 /* ( */) {
      const [str, next] = literalString(src, pos);
      push({ str });
      pos = next;
    } else if (b === 0x3c /* < */) {
      if (src[pos + 1] === 0x3c) {
        pos = skipDict(src, pos);
        push({ dict: true });
      } else {
        const [str, next] = hexString(src, pos);
        push({ str });
        pos = next;
      }
    } else if (b === 0x5b /* [ */) {
      arrays.push([]);
      pos++;
    } else if (b === 0x5d /* ] */) {
      const done = arrays.pop();
      pos++;
      if (done) push(done);
    } else if (b === 0x2f /* / */) {
      let end = pos + 1;
      while (end < n && isRegular(src[end])) end++;
      push({ name: decodeName(src.subarray(pos + 1, end)) });
      pos = end;
    } else if (b === 0x3e || b === 0x29 || b === 0x7b || b === 0x7d) {
      pos++; // stray delimiter: ignore, as readers do
    } else {
      let end = pos;
      while (end < n && isRegular(src[end])) end++;
      const word = ascii(src, pos, end);
      pos = end;
      if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(word)) push(Number(word));
      else if (word === 'true' || word === 'false') push(word === 'true');
      else if (word === 'null') push(null);
      else if (arrays.length) {
        // An operator inside an array is malformed; drop the array and resynchronise.
        arrays.length = 0;
        operands = [];
        opStart = -1;
      } else {
        if (word === 'BI') pos = skipInlineImage(src, pos);
        yield { op: word, operands, start: opStart, end: pos };
        operands = [];
        opStart = -1;
      }
    }
  }
}

function ascii(src: Uint8Array, from: number, to: number): string {
  let s = '';
  for (let i = from; i < to; i++) s += String.fromCharCode(src[i]);
  return s;
}

function decodeName(bytes: Uint8Array): string {
  return ascii(bytes, 0, bytes.length).replace(/#([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

function literalString(src: Uint8Array, pos: number): [Uint8Array, number] {
  const out: number[] = [];
  let depth = 1;
  let i = pos + 1;
  while (i < src.length) {
    const c = src[i];
    if (c === 0x5c /* \ */) {
      const e = src[i + 1];
      i += 2;
      if (e === undefined) break;
      const simple: Record<number, number> = { 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x62: 0x08, 0x66: 0x0c, 0x28: 0x28, 0x29: 0x29, 0x5c: 0x5c };
      if (e in simple) out.push(simple[e]);
      else if (e >= 0x30 && e <= 0x37) {
        let v = e - 0x30;
        for (let k = 0; k < 2 && src[i] >= 0x30 && src[i] <= 0x37; k++) v = v * 8 + (src[i++] - 0x30);
        out.push(v & 0xff);
      } else if (e === 0x0d) {
        if (src[i] === 0x0a) i++;
      } else if (e !== 0x0a) out.push(e);
      continue;
    }
    if (c === 0x28) depth++;
    else if (c === 0x29 && --depth === 0) return [Uint8Array.from(out), i + 1];
    out.push(c);
    i++;
  }
  return [Uint8Array.from(out), src.length];
}

function hexString(src: Uint8Array, pos: number): [Uint8Array, number] {
  let i = pos + 1;
  let digits = '';
  while (i < src.length && src[i] !== 0x3e) {
    const ch = String.fromCharCode(src[i]);
    if (/[0-9a-fA-F]/.test(ch)) digits += ch;
    i++;
  }
  if (digits.length % 2) digits += '0';
  const out = new Uint8Array(digits.length / 2);
  for (let k = 0; k < out.length; k++) out[k] = parseInt(digits.slice(k * 2, k * 2 + 2), 16);
  return [out, Math.min(i + 1, src.length)];
}

/** Skips a `<< ... >>` dictionary (BDC/DP properties), strings and nesting included. */
function skipDict(src: Uint8Array, pos: number): number {
  let depth = 0;
  let i = pos;
  while (i < src.length) {
    if (src[i] === 0x3c && src[i + 1] === 0x3c) {
      depth++;
      i += 2;
    } else if (src[i] === 0x3e && src[i + 1] === 0x3e) {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else if (src[i] === 0x28) i = literalString(src, i)[1];
    else if (src[i] === 0x3c) i = hexString(src, i)[1];
    else i++;
  }
  return src.length;
}

/** Skips from after `BI` to after `EI`: the image data between ID and EI is binary. */
function skipInlineImage(src: Uint8Array, pos: number): number {
  let i = pos;
  // Find the ID keyword (parameters are short tokens).
  while (i < src.length - 1) {
    if (src[i] === 0x49 && src[i + 1] === 0x44 && (i === 0 || WS.has(src[i - 1])) && (i + 2 >= src.length || WS.has(src[i + 2]))) break;
    i++;
  }
  i += 3;
  while (i < src.length - 1) {
    if (src[i] === 0x45 && src[i + 1] === 0x49 && WS.has(src[i - 1]) && (i + 2 >= src.length || WS.has(src[i + 2]))) return i + 2;
    i++;
  }
  return src.length;
}
