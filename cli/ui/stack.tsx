import { Box } from 'ink';
import type { ReactNode } from 'react';

export interface StackProps {
  children?: ReactNode;
  /** Blank lines between children (default 1). */
  gap?: number;
}

/** Children one under the other. */
export function Stack({ children, gap = 1 }: StackProps) {
  return (
    <Box flexDirection="column" gap={gap} flexShrink={0}>
      {children}
    </Box>
  );
}
