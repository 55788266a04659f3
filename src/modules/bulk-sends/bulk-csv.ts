import { AppError } from '../../errors.js';

/**
 * CSV rows as bulk-send rows. RFC 4180: comma-separated, fields in double quotes may hold commas,
 * line breaks and doubled quotes; CRLF or LF; a UTF-8 BOM is dropped. The header names the columns:
 *
 *   recipients.<slotId>.email, recipients.<slotId>.name   one pair per template slot
 *   title, expiresAt, storageExpiryDays                   as in a from-template body
 *   meta.subject, meta.message, meta.redirectUrl          the meta keys
 *   prefill.<fieldId>                                     a template field's value
 *
 * An empty cell is no value. Each data line becomes one row, checked like a JSON row.
 */
const COLUMN = /^(?:recipients\.(\d{1,3})\.(email|name)|title|expiresAt|storageExpiryDays|meta\.(subject|message|redirectUrl)|prefill\.(\d{1,9}))$/;

const bad = (line: number, message: string) => new AppError('INVALID_CSV', `CSV line ${line}: ${message}`, { details: [{ path: `body.line.${line}`, message }] });

/** The records of `text`, each with the line it starts on. Bounded by the body's limit (the caller's). */
function records(text: string): { line: number; cells: string[] }[] {
  const out: { line: number; cells: string[] }[] = [];
  let cells: string[] = [];
  let cell = '';
  let quoted = false;
  let line = 1;
  let start = 1;
  let touched = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') (cell += '"'), i++;
        else {
          quoted = false;
          const next = text[i + 1];
          if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') throw bad(line, 'text after a closing quote');
        }
      } else {
        if (c === '\n') line++;
        cell += c;
      }
      continue;
    }
    if (c === '"') {
      if (cell !== '') throw bad(line, 'a quote inside an unquoted cell');
      quoted = true;
      touched = true;
    } else if (c === ',') {
      cells.push(cell);
      cell = '';
      touched = true;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      if (touched || cell !== '') out.push({ line: start, cells: [...cells, cell] });
      cells = [];
      cell = '';
      touched = false;
      line++;
      start = line;
    } else cell += c;
  }
  if (quoted) throw bad(start, 'a quoted cell is never closed');
  if (touched || cell !== '') out.push({ line: start, cells: [...cells, cell] });
  return out;
}

/** Parses the CSV into rows of the JSON shape (not yet checked: that is the rows' own validation). */
export function csvRows(text: string, maxRows: number): unknown[] {
  const all = records(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  if (all.length === 0) throw bad(1, 'no header line');
  const [header, ...data] = all;
  const columns = header.cells.map((c) => c.trim());
  const seen = new Set<string>();
  for (const c of columns) {
    if (!COLUMN.test(c)) throw bad(1, `unknown column "${c.slice(0, 60)}"; columns are recipients.<slotId>.email, recipients.<slotId>.name, title, expiresAt, storageExpiryDays, meta.subject, meta.message, meta.redirectUrl, prefill.<fieldId>`);
    if (seen.has(c)) throw bad(1, `column "${c}" is repeated`);
    seen.add(c);
  }
  if (data.length === 0) throw bad(2, 'no data line after the header');
  if (data.length > maxRows) throw new AppError('TOO_MANY_ROWS', `A bulk send takes at most ${maxRows} rows; the CSV has ${data.length}`, { maxRows });
  return data.map(({ line, cells }) => {
    if (cells.length > columns.length) throw bad(line, `${cells.length} cells, but the header names ${columns.length} columns`);
    const row: Record<string, unknown> = {};
    const slots = new Map<number, Record<string, string>>();
    const meta: Record<string, string> = {};
    const prefill: Record<string, string> = {};
    columns.forEach((column, i) => {
      const value = cells[i] ?? '';
      if (value === '') return;
      const m = COLUMN.exec(column)!;
      if (m[1]) {
        const slot = Number(m[1]);
        slots.set(slot, { ...slots.get(slot), [m[2]]: value });
      } else if (m[3]) meta[m[3]] = value;
      else if (m[4]) prefill[m[4]] = value;
      else if (column === 'storageExpiryDays') row.storageExpiryDays = /^\d{1,6}$/.test(value) ? Number(value) : value;
      else row[column] = value;
    });
    row.recipients = [...slots].sort(([a], [b]) => a - b).map(([id, p]) => ({ id, ...p }));
    if (Object.keys(meta).length) row.meta = meta;
    if (Object.keys(prefill).length) row.prefill = prefill;
    return row;
  });
}
