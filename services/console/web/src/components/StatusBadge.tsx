// A job's, dataset's, export's, evaluation's, sweep's or trial's status as a coloured badge.
import { Badge } from '@mantine/core';

const COLORS: Record<string, string> = {
  queued: 'gray',
  preparing: 'cyan',
  training: 'blue',
  paused: 'yellow',
  idle: 'teal', // a Tinker run no worker holds: its state saved, resumed by its next call
  running: 'blue',
  processing: 'blue',
  completed: 'green',
  ready: 'green',
  failed: 'red',
  cancelled: 'orange',
  pruned: 'grape', // a sweep's trial stopped early by its pruner
};

export function StatusBadge({ status }: { status: string }) {
  return (
    <Badge color={COLORS[status] ?? 'gray'} variant="light" data-testid="status">
      {status}
    </Badge>
  );
}
