import { Box, Text } from 'ink';

export interface DetailsProps {
  title?: string;
  /** Label and formatted value pairs, in display order. */
  fields: [label: string, value: string][];
}

/** A titled list of `label  value` lines (one record). */
export function Details({ title, fields }: DetailsProps) {
  const width = Math.max(0, ...fields.map(([label]) => label.length));
  return (
    <Box flexDirection="column" flexShrink={0}>
      {title ? <Text bold>{title}</Text> : null}
      {fields.map(([label, value]) => (
        <Text key={label}>
          <Text dimColor>{`${label.padEnd(width)}  `}</Text>
          {value}
        </Text>
      ))}
    </Box>
  );
}
