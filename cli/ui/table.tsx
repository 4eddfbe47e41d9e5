import { Box, Text } from 'ink';

export interface TableProps {
  headers: string[];
  /** Cells already formatted as text, one array per row, in header order. */
  rows: string[][];
  /** Per column; default left. */
  align?: ('left' | 'right')[];
  /** Shown instead of the rows when there are none. */
  empty?: string;
}

const GAP = '  ';

// Fixed-width lines that never wrap: a table wider than the terminal stays one row per line, so
// piped output (`| grep`, `| less -S`) keeps its shape.
export function Table({ headers, rows, align = [], empty = 'Nothing to show.' }: TableProps) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const total = widths.reduce((sum, w) => sum + w, 0) + GAP.length * (widths.length - 1);
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (align[i] === 'right' ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join(GAP)
      .trimEnd();
  return (
    <Box flexDirection="column" width={total} flexShrink={0}>
      <Text bold>{line(headers)}</Text>
      <Text dimColor>{widths.map((w) => '─'.repeat(w)).join(GAP)}</Text>
      {rows.length === 0 ? <Text dimColor>{empty}</Text> : rows.map((row, i) => <Text key={i}>{line(row)}</Text>)}
    </Box>
  );
}
