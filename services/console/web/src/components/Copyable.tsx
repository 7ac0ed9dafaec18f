// A value to paste elsewhere (a tinker:// path, a model name): shown in monospace beside a button that copies it.
import { Button, Code, CopyButton, Group } from '@mantine/core';

export function Copyable({ value, label }: { value: string; /** What it is, for the button's accessible name. */ label: string }) {
  return (
    <Group gap={4} wrap="nowrap">
      <Code style={{ wordBreak: 'break-all' }}>{value}</Code>
      <CopyButton value={value}>
        {({ copied, copy }) => (
          <Button size="compact-xs" variant="subtle" color={copied ? 'teal' : 'gray'} onClick={copy} aria-label={`Copy ${label}`} style={{ flexShrink: 0 }}>
            {copied ? 'copied' : 'copy'}
          </Button>
        )}
      </CopyButton>
    </Group>
  );
}
