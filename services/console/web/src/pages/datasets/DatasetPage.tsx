// One processed dataset: its splits, their first records as chat bubbles, delete, and a way to train on it.
import { useEffect, useState } from 'react';
import { Anchor, Button, Card, Group, Progress, SimpleGrid, Stack, Tabs, Text, Title } from '@mantine/core';
import { Link, useLocation } from 'wouter';
import { api } from '../../api/client.ts';
import type { DatasetDeleteResult, ProcessedDataset } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { RecordBubbles } from '../../components/ChatBubbles.tsx';
import { ConfirmButton } from '../../components/ConfirmButton.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatTime } from '../../components/format.ts';
import { StatusBadge } from '../../components/StatusBadge.tsx';

export function DatasetPage({ id }: { id: string }) {
  const [, navigate] = useLocation();
  const [deleteError, setDeleteError] = useState<string>();
  const dataset = useLoad((signal) => api<ProcessedDataset>('preprocessing', `/datasets/${encodeURIComponent(id)}`, { signal }), [id]);
  const data = dataset.data;

  // A dataset a worker is still augmenting is looked at again until it is ready or failed.
  useEffect(() => {
    if (data?.status !== 'processing') return;
    const timer = setTimeout(dataset.reload, 2000);
    return () => clearTimeout(timer);
  }, [data, dataset.reload]);

  const remove = async () => {
    try {
      await api<DatasetDeleteResult>('preprocessing', `/datasets/${encodeURIComponent(id)}`, { method: 'DELETE' });
      navigate('/datasets');
    } catch (err) {
      setDeleteError((err as Error).message);
    }
  };

  return (
    <Stack>
      <Anchor component={Link} href="/datasets" size="sm">
        ← Datasets
      </Anchor>
      <ErrorAlert message={dataset.error} />
      {data && (
        <>
          <Group justify="space-between" wrap="wrap">
            <Group gap="sm">
              <Title order={2}>{data.dataset_name}</Title>
              <StatusBadge status={data.status} />
            </Group>
            <Group gap="xs">
              <Button component={Link} href={`/training/new?dataset=${encodeURIComponent(id)}`} disabled={data.status !== 'ready'}>
                Train on it
              </Button>
              <ConfirmButton question={`Delete the processed dataset “${data.dataset_name}”? The uploaded file is kept.`} confirmLabel="Delete dataset" onConfirm={remove}>
                Delete
              </ConfirmButton>
            </Group>
          </Group>
          <ErrorAlert message={deleteError} title="Not deleted" />
          <Text size="sm" c="dimmed">
            {data.processing_mode ?? 'language_modeling'} · {data.modality} · from upload {data.dataset_id} · made {formatTime(data.created_at)}
          </Text>
          {data.status === 'processing' && data.progress && <Progress value={(100 * data.progress.done) / Math.max(data.progress.total, 1)} aria-label="Processing progress" />}
          <ErrorAlert message={data.error} title="Processing failed" />
          {data.splits.length > 0 && (
            <Tabs defaultValue={data.splits[0]!.split_name}>
              <Tabs.List>
                {data.splits.map((split) => (
                  <Tabs.Tab key={split.split_name} value={split.split_name}>
                    {split.split_name} ({split.num_rows.toLocaleString('en')})
                  </Tabs.Tab>
                ))}
              </Tabs.List>
              {data.splits.map((split) => (
                <Tabs.Panel key={split.split_name} value={split.split_name} pt="md">
                  <Card withBorder>
                    <Text size="xs" c="dimmed" mb="xs" style={{ overflowWrap: 'anywhere' }}>
                      {split.num_rows.toLocaleString('en')} records in {split.path}; the first {split.samples.length}:
                    </Text>
                    <SimpleGrid cols={{ base: 1, md: 2 }}>
                      {split.samples.map((record, i) => (
                        <RecordBubbles key={i} record={record} />
                      ))}
                    </SimpleGrid>
                  </Card>
                </Tabs.Panel>
              ))}
            </Tabs>
          )}
        </>
      )}
    </Stack>
  );
}
