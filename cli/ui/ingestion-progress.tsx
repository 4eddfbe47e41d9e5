import { Box, Text } from 'ink';

export interface UploadProgress {
  /** The file name as sent. */
  name: string;
  /** pending, running, completed, failed, cancelled; `rejected` when the upload itself was refused. */
  status: string;
  stage: string | null;
  /** 0-100. */
  progress: number;
}

const BAR_WIDTH = 24;
const COLOR: Record<string, string> = { completed: 'green', failed: 'red', cancelled: 'yellow', rejected: 'red' };

/** `[█████░░░░░]` for a 0-100 value. */
export function progressBar(progress: number, width = BAR_WIDTH): string {
  const filled = Math.round((Math.min(Math.max(progress, 0), 100) / 100) * width);
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

/** One live bar per uploaded file: name, bar, percent, stage (or the final status). */
export function IngestionProgress({ uploads }: { uploads: UploadProgress[] }) {
  const nameWidth = Math.max(...uploads.map((u) => u.name.length), 4);
  return (
    <Box flexDirection="column" flexShrink={0}>
      {uploads.map((u, i) => {
        const done = u.status in COLOR;
        const label = done ? u.status : (u.stage ?? u.status);
        return (
          <Text key={i}>
            {u.name.padEnd(nameWidth)} <Text color={COLOR[u.status] ?? 'cyan'}>{progressBar(u.progress)}</Text> {`${Math.round(u.progress)}%`.padStart(4)}{' '}
            <Text dimColor={!done}>{label}</Text>
          </Text>
        );
      })}
    </Box>
  );
}
