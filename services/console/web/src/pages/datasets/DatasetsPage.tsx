// Datasets: upload a file, process it (or an earlier upload, made here, with ftune or through /v1/files) into
// conversations, delete an upload, and the processed datasets already made.
import { useState, type ReactNode } from 'react';
import { Anchor, Button, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import { Link } from 'wouter';
import { api } from '../../api/client.ts';
import type { DatasetDeleteResult, DatasetList, UploadList, UploadResult } from '../../api/types.ts';
import { useLoad, type Loaded } from '../../api/use-load.ts';
import { ConfirmButton } from '../../components/ConfirmButton.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatBytes, formatTime } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { ProcessForm } from './ProcessForm.tsx';
import { UploadCard } from './UploadCard.tsx';

export function DatasetsPage() {
  const [upload, setUpload] = useState<UploadResult>();
  return (
    <Stack>
      <Title order={2}>Datasets</Title>
      <UploadCard upload={upload} onUploaded={setUpload} />
      {upload && <ProcessForm key={upload.dataset_id} upload={upload} />}
      <Uploads current={upload?.dataset_id} onChoose={setUpload} onDeleted={(id) => id === upload?.dataset_id && setUpload(undefined)} />
      <ProcessedDatasets />
    </Stack>
  );
}

/** A card listing what `list` loaded: its title, a Refresh button, the API's sentence when loading failed, `empty` when
 *  there is nothing, else the table. */
function ListCard<T>({ title, list, count, empty, children }: { title: string; list: Loaded<T>; count: (data: T) => number; empty: string; children: (data: T) => ReactNode }) {
  return (
    <Card withBorder padding="lg">
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h4">
            {title}
          </Title>
          <Button variant="subtle" size="compact-sm" onClick={list.reload} loading={list.loading}>
            Refresh
          </Button>
        </Group>
        <ErrorAlert message={list.error} />
        {list.data !== undefined && count(list.data) === 0 && <Text c="dimmed">{empty}</Text>}
        {list.data !== undefined && count(list.data) > 0 && children(list.data)}
      </Stack>
    </Card>
  );
}

/** Every file the user uploaded, from anywhere: choosing one opens the processing form above for it; deleting one
 *  keeps the datasets processed from it, and what the API refuses (a batch still reads it: 409) is said above the list. */
function Uploads({ current, onChoose, onDeleted }: { current: string | undefined; onChoose: (upload: UploadResult) => void; onDeleted: (id: string) => void }) {
  const list = useLoad((signal) => api<UploadList>('preprocessing', '/datasets/uploads', { signal }), [current]);
  const [deleteError, setDeleteError] = useState<string>();
  const remove = async (file: UploadResult) => {
    setDeleteError(undefined);
    try {
      await api<DatasetDeleteResult>('preprocessing', `/datasets/${encodeURIComponent(file.dataset_id)}`, { method: 'DELETE' });
      onDeleted(file.dataset_id);
      list.reload();
    } catch (err) {
      setDeleteError(`${file.filename}: ${(err as Error).message}`);
    }
  };
  return (
    <ListCard title="Uploaded files" list={list} count={(data) => data.uploads.length} empty="None yet: upload a file above (or with ftune datasets upload).">
      {(data) => (
        <>
          <ErrorAlert message={deleteError} title="Not deleted" />
          <ScrollTable label="Uploaded files" minWidth={560} highlightOnHover headers={['File', 'Rows', 'Columns', 'Size', 'Uploaded', '']}>
            {data.uploads.map((file) => (
              <Table.Tr key={file.dataset_id}>
                <Table.Td>{file.filename}</Table.Td>
                <Table.Td>{file.num_examples.toLocaleString('en')}</Table.Td>
                <Table.Td>{file.columns.join(', ')}</Table.Td>
                <Table.Td>{formatBytes(file.size_bytes)}</Table.Td>
                <Table.Td>{formatTime(file.created_at)}</Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap">
                    <Button size="compact-sm" variant="light" disabled={file.dataset_id === current} onClick={() => onChoose(file)} aria-label={`Process ${file.filename} (${file.dataset_id})`}>
                      Process
                    </Button>
                    <ConfirmButton
                      size="compact-sm"
                      aria-label={`Delete ${file.filename} (${file.dataset_id})`}
                      question={`Delete the uploaded file “${file.filename}”? The datasets processed from it are kept.`}
                      confirmLabel="Delete file"
                      onConfirm={() => remove(file)}
                    >
                      Delete
                    </ConfirmButton>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </ScrollTable>
        </>
      )}
    </ListCard>
  );
}

function ProcessedDatasets() {
  const list = useLoad((signal) => api<DatasetList>('preprocessing', '/datasets', { signal }), []);
  return (
    <ListCard title="Processed datasets" list={list} count={(data) => data.datasets.length} empty="None yet: upload a file and process it above.">
      {(data) => (
        <ScrollTable label="Processed datasets" minWidth={560} highlightOnHover headers={['Name', 'Mode', 'Rows', 'Splits', 'Status', 'Created']}>
          {data.datasets.map((dataset) => (
            <Table.Tr key={dataset.processed_dataset_id}>
              <Table.Td>
                <Anchor component={Link} href={`/datasets/${dataset.processed_dataset_id}`}>
                  {dataset.dataset_name}
                </Anchor>
              </Table.Td>
              <Table.Td>{dataset.processing_mode ?? '—'}</Table.Td>
              <Table.Td>{dataset.num_examples.toLocaleString('en')}</Table.Td>
              <Table.Td>{dataset.splits.join(', ')}</Table.Td>
              <Table.Td>
                <StatusBadge status={dataset.status} />
              </Table.Td>
              <Table.Td>{formatTime(dataset.created_at)}</Table.Td>
            </Table.Tr>
          ))}
        </ScrollTable>
      )}
    </ListCard>
  );
}
