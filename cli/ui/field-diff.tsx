import { Box, Text } from 'ink';

export interface FieldChange {
  field: string;
  /** The old value, already formatted as lines of text. */
  before: string[];
  /** The new value, already formatted as lines of text. */
  after: string[];
}

export interface FieldDiffProps {
  title?: string;
  changes: FieldChange[];
  /** Shown instead of the changes when there are none. */
  empty?: string;
}

const LABEL_WIDTH = 'before'.length;

function Value({ label, color, lines }: { label: string; color: string; lines: string[] }) {
  return (
    <Box flexDirection="column" flexShrink={0}>
      {lines.map((line, i) => (
        <Text key={i}>
          {'  '}
          <Text color={color}>{(i === 0 ? label : '').padEnd(LABEL_WIDTH)}</Text>
          {`  ${line}`}
        </Text>
      ))}
    </Box>
  );
}

/** A field-by-field comparison: each field's name, then its value before and after. */
export function FieldDiff({ title, changes, empty = 'No differences.' }: FieldDiffProps) {
  return (
    <Box flexDirection="column" flexShrink={0}>
      {title ? <Text bold>{title}</Text> : null}
      {changes.length === 0 ? <Text dimColor>{empty}</Text> : null}
      {changes.map((change) => (
        <Box key={change.field} flexDirection="column" flexShrink={0} marginTop={title ? 1 : 0}>
          <Text bold color="cyan">
            {change.field}
          </Text>
          <Value label="before" color="red" lines={change.before} />
          <Value label="after" color="green" lines={change.after} />
        </Box>
      ))}
    </Box>
  );
}
