import { Box, Text } from 'ink';

export type StatusKind = 'success' | 'error' | 'warning' | 'info';

const SYMBOL: Record<StatusKind, { symbol: string; color: string }> = {
  success: { symbol: '✔', color: 'green' },
  error: { symbol: '✖', color: 'red' },
  warning: { symbol: '!', color: 'yellow' },
  info: { symbol: '•', color: 'cyan' },
};

export interface StatusLineProps {
  kind: StatusKind;
  message: string;
  /** Indented lines under the message. */
  lines?: string[];
  /** Dim lines after `lines` (what to do next). */
  hints?: string[];
}

export function StatusLine({ kind, message, lines = [], hints = [] }: StatusLineProps) {
  const { symbol, color } = SYMBOL[kind];
  return (
    <Box flexDirection="column" flexShrink={0}>
      <Text>
        <Text color={color}>{symbol}</Text> {message}
      </Text>
      {lines.map((line, i) => (
        <Text key={`l${i}`}>{`  • ${line}`}</Text>
      ))}
      {hints.map((hint, i) => (
        <Text key={`h${i}`} dimColor>{`  ${hint}`}</Text>
      ))}
    </Box>
  );
}

export interface StatusListProps {
  items: StatusLineProps[];
}

export function StatusList({ items }: StatusListProps) {
  return (
    <Box flexDirection="column" flexShrink={0}>
      {items.map((item, i) => (
        <StatusLine key={i} {...item} />
      ))}
    </Box>
  );
}
