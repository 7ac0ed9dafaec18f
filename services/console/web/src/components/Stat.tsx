// One figure of a job (its step, loss, …) in a small card: the label above, the value below.
import { Card, Text } from '@mantine/core';

export function Stat({ label, value }: { label: string; value: string }) {
  return (
    <Card withBorder padding="xs">
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={600} data-stat={label}>
        {value}
      </Text>
    </Card>
  );
}
