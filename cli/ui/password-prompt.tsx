import { Text, useInput, useStdin } from 'ink';
import { useState } from 'react';

export interface PasswordPromptProps {
  label: string;
  onSubmit: (password: string) => void;
  onCancel: () => void;
}

/** Reads a password without echoing it. Keys are only read where raw mode works (a real terminal). */
export function PasswordPrompt({ label, onSubmit, onCancel }: PasswordPromptProps) {
  const { isRawModeSupported } = useStdin();
  const [value, setValue] = useState('');
  const [done, setDone] = useState(false);
  useInput(
    (input, key) => {
      // A pasted chunk can carry the line end with it ("secret\r").
      const lineEnd = input.search(/[\r\n]/);
      if (key.return || lineEnd >= 0) {
        setDone(true);
        onSubmit(value + (lineEnd > 0 ? input.slice(0, lineEnd) : ''));
      } else if (key.escape || (key.ctrl && input === 'c')) {
        setDone(true);
        onCancel();
      } else if (key.backspace || key.delete) {
        setValue((v) => v.slice(0, -1));
      } else if (!key.ctrl && !key.meta && input) {
        setValue((v) => v + input);
      }
    },
    { isActive: isRawModeSupported === true && !done },
  );
  return (
    <Text>
      <Text bold>{label}</Text> <Text dimColor>{'•'.repeat(value.length)}</Text>
    </Text>
  );
}
