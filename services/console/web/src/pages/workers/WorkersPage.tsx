// Workers and queues: the live workers with their devices and work, and each queue lane's waiting and running entries,
// the oldest one's wait and who serves it (GET /workers: the numbers the services' /metrics carry), refreshed every
// 5 s, for people without Grafana.
import { Badge, Group, Stack, Table, Text, Title } from '@mantine/core';
import { api } from '../../api/client.ts';
import type { WorkerList } from '../../api/types.ts';
import { useEvery, useLoad } from '../../api/use-load.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatDuration, formatTime, plural } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';

const GIB = 1024 ** 3;

export function WorkersPage() {
  const list = useLoad((signal) => api<WorkerList>('training', '/workers', { signal }), []);
  const { reload } = list;
  useEvery(5000, true, reload);

  return (
    <Stack>
      <Title order={2}>Workers and queues</Title>
      {list.error && <ErrorAlert message={list.error} />}
      <Title order={3} size="h4">Queues</Title>
      <ScrollTable label="Queues" minWidth={560} headers={['Lane', 'Waiting', 'Running', 'Oldest waiting', 'Live workers']}>
        {(list.data?.queues ?? []).map((lane) => (
          <Table.Tr key={lane.name}>
            <Table.Td>{lane.name}</Table.Td>
            <Table.Td>{lane.waiting}</Table.Td>
            <Table.Td>{lane.active}</Table.Td>
            <Table.Td>{lane.waiting > 0 ? formatDuration(lane.oldest_waiting_seconds) : '–'}</Table.Td>
            <Table.Td>
              {lane.workers === 0 && lane.waiting > 0 ? <Badge color="red">none: its work waits</Badge> : lane.workers}
            </Table.Td>
          </Table.Tr>
        ))}
      </ScrollTable>
      <Title order={3} size="h4">Workers</Title>
      {list.data && list.data.workers.length === 0 && <Text c="dimmed">No live worker: start one with pnpm start:worker.</Text>}
      <ScrollTable label="Workers" minWidth={720} headers={['Worker', 'Host', 'Devices', 'Lanes', 'Working on', 'Preparing for chat', 'Last seen']}>
        {(list.data?.workers ?? []).map((worker) => (
          <Table.Tr key={worker.worker_id}>
            <Table.Td>{worker.worker_id}</Table.Td>
            <Table.Td>{worker.host}</Table.Td>
            <Table.Td>
              <Group gap={4}>
                {worker.devices.map((device, i) => (
                  <Badge key={i} variant="light" color={device.kind === 'cuda' ? 'green' : 'gray'}>
                    {device.name} · {(device.memory_bytes / GIB).toFixed(0)} GiB
                  </Badge>
                ))}
              </Group>
            </Table.Td>
            <Table.Td>{worker.queues.join(', ')}</Table.Td>
            <Table.Td>{worker.current_jobs.length === 0 ? 'idle' : plural(worker.current_jobs.length, 'piece') + ' of work'}</Table.Td>
            <Table.Td>
              {worker.preparing.job_id === null ? '–' : worker.preparing.job_id}
              {worker.preparing.waiting.length > 0 && ` (${worker.preparing.waiting.length} waiting)`}
            </Table.Td>
            <Table.Td>{formatTime(worker.last_seen_at)}</Table.Td>
          </Table.Tr>
        ))}
      </ScrollTable>
    </Stack>
  );
}
