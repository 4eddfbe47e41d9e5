import { Text, useAnimation } from 'ink';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export interface SpinnerProps {
  label: string;
}

/** An animated "working" line; only mounted on an interactive terminal. */
export function Spinner({ label }: SpinnerProps) {
  const { frame } = useAnimation({ interval: 80 });
  return (
    <Text>
      <Text color="cyan">{FRAMES[frame % FRAMES.length]}</Text> {label}
    </Text>
  );
}
