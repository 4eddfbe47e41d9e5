// A dataset's `cases_file`: JSON Lines (one case object per line) or CSV (a header row, then columns
// input (JSON text), message, expected_output (JSON or text), notes). Each case keeps the line it
// starts on, so a bad case, here or in the server's answer, is reported at file:line.

export interface CaseLine {
  line: number;
  value: unknown;
}

export interface LineProblem {
  line: number;
  message: string;
}

export interface CasesRead {
  cases: CaseLine[];
  problems: LineProblem[];
}

export function readJsonLines(text: string): CasesRead {
  const cases: CaseLine[] = [];
  const problems: LineProblem[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    if (!raw.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      problems.push({ line, message: `not JSON: ${(err as Error).message}` });
      return;
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      problems.push({ line, message: 'each line must be one case: a JSON object such as {"input": {...}, "expected_output": "..."}' });
      return;
    }
    cases.push({ line, value });
  });
  return { cases, problems };
}

export const CSV_COLUMNS = ['input', 'message', 'expected_output', 'notes'] as const;

/** expected_output in a CSV cell: JSON (an object, or a quoted string) when it parses as such, else the text. */
function expectedOutputCell(cell: string): unknown {
  if (!cell) return null;
  try {
    const value: unknown = JSON.parse(cell);
    if (typeof value === 'string' || (value && typeof value === 'object' && !Array.isArray(value))) return value;
  } catch {
    // plain text
  }
  return cell;
}

export async function readCsvCases(text: string): Promise<CasesRead> {
  // Loaded here: only datasets kept as CSV need the parser.
  const { parse } = await import('csv-parse/sync');
  const cases: CaseLine[] = [];
  const problems: LineProblem[] = [];
  let rows: { record: Record<string, string>; raw: string; info: { lines: number } }[];
  try {
    rows = parse(text, { columns: true, skip_empty_lines: true, info: true, raw: true, bom: true }) as typeof rows;
  } catch (err) {
    const line = typeof (err as { lines?: unknown }).lines === 'number' ? (err as { lines: number }).lines : 1;
    return { cases, problems: [{ line, message: (err as Error).message.replace(/ (at|on) line \d+$/, '') }] };
  }
  const header = text.replace(/^\uFEFF/, '').split(/\r?\n/, 1)[0];
  const columns = rows[0] ? Object.keys(rows[0].record) : header.split(',').map((c) => c.trim().replace(/^"|"$/g, ''));
  const unknown = columns.filter((c) => !(CSV_COLUMNS as readonly string[]).includes(c));
  if (unknown.length) problems.push({ line: 1, message: `unknown column${unknown.length > 1 ? 's' : ''} ${unknown.map((c) => `"${c}"`).join(', ')} (the columns: ${CSV_COLUMNS.join(', ')})` });
  if (!columns.includes('input')) problems.push({ line: 1, message: 'the header has no "input" column (the columns: input, message, expected_output, notes)' });
  if (problems.length) return { cases, problems };
  for (const { record, raw, info } of rows) {
    // info.lines is the record's last line; a quoted cell may span several.
    const body = raw.replace(/^(\r?\n)+/, '').replace(/\r?\n$/, '');
    const line = info.lines - (body.match(/\n/g)?.length ?? 0);
    let input: unknown = {};
    const cell = (record.input ?? '').trim();
    if (cell) {
      try {
        input = JSON.parse(cell);
      } catch (err) {
        problems.push({ line, message: `input: not JSON: ${(err as Error).message}` });
        continue;
      }
    }
    const nullIfEmpty = (v: string | undefined) => (v === undefined || v === '' ? null : v);
    cases.push({
      line,
      value: { input, message: nullIfEmpty(record.message), expected_output: expectedOutputCell(record.expected_output ?? ''), notes: nullIfEmpty(record.notes) },
    });
  }
  return { cases, problems };
}
