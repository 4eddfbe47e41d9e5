import { Box, Text } from 'ink';

export interface IssuedKeyProps {
  /** What the key belongs to, e.g. "tenant Acme (production)". */
  owner: string;
  apiKey: string;
  /** Extra lines under the key (what happened to older keys). */
  notes?: string[];
}

/** A freshly issued API key: the one secret the CLI ever prints, with the warning that it is shown once. */
export function IssuedKey({ owner, apiKey, notes = [] }: IssuedKeyProps) {
  return (
    <Box flexDirection="column" flexShrink={0}>
      <Text>
        <Text color="yellow" bold>
          API key for {owner}
        </Text>
        <Text> — shown only once, save it now:</Text>
      </Text>
      <Box borderStyle="round" borderColor="yellow" paddingX={1} alignSelf="flex-start" flexShrink={0}>
        <Text>{apiKey}</Text>
      </Box>
      {notes.map((note, i) => (
        <Text key={i} dimColor>
          {note}
        </Text>
      ))}
    </Box>
  );
}
