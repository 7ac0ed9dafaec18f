// Upload a raw dataset file with a progress bar, then show what the service read: rows, columns and the first rows.
import { useState } from 'react';
import { Badge, Card, FileInput, Group, Progress, ScrollArea, Stack, Table, Text, Title } from '@mantine/core';
import { uploadWithProgress } from '../../api/client.ts';
import type { UploadResult } from '../../api/types.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatBytes } from '../../components/format.ts';

export function UploadCard({ upload, onUploaded }: { upload: UploadResult | undefined; onUploaded: (upload: UploadResult | undefined) => void }) {
  const [progress, setProgress] = useState<number>();
  const [error, setError] = useState<string>();
  const [file, setFile] = useState<File | null>(null);

  const send = async (chosen: File | null) => {
    setFile(chosen);
    setError(undefined);
    onUploaded(undefined);
    if (!chosen) return setProgress(undefined);
    setProgress(0);
    try {
      onUploaded(await uploadWithProgress<UploadResult>('preprocessing', '/datasets/upload', chosen, setProgress));
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const percent = progress === undefined ? undefined : Math.round(progress * 100);
  return (
    <Card withBorder padding="lg">
      <Stack>
        <Title order={2} size="h4">
          1. Upload a file
        </Title>
        <Text size="sm" c="dimmed">
          CSV, TSV, JSON, JSONL or Parquet. The file is stored as it is; processing comes next.
        </Text>
        <FileInput label="Dataset file" placeholder="Choose a file" value={file} onChange={(f) => void send(f)} clearable accept=".csv,.tsv,.json,.jsonl,.parquet,text/csv,application/json" />
        {percent !== undefined && (
          <Stack gap={4}>
            <Progress value={percent} size="lg" animated={percent < 100 && !error} aria-label="Upload progress" data-testid="upload-progress" />
            <Text size="xs" c="dimmed">
              {error ? 'upload failed' : percent < 100 ? `${percent}% sent` : upload ? '100% — stored' : '100% sent, reading the file…'}
            </Text>
          </Stack>
        )}
        <ErrorAlert message={error} title="The upload was refused" />
        {upload && <UploadSummary upload={upload} />}
      </Stack>
    </Card>
  );
}

function UploadSummary({ upload }: { upload: UploadResult }) {
  return (
    <Stack gap="xs" data-testid="upload-summary">
      <Text size="sm">
        <b>{upload.filename}</b> · {formatBytes(upload.size_bytes)} · {upload.num_examples.toLocaleString('en')} rows
      </Text>
      <Group gap={4} aria-label="Columns">
        {upload.columns.map((column) => (
          <Badge key={column} variant="light" tt="none">
            {column}
          </Badge>
        ))}
      </Group>
      <ScrollArea type="auto">
        <Table striped withTableBorder fz="xs" aria-label="First rows of the file">
          <Table.Thead>
            <Table.Tr>
              {upload.columns.map((column) => (
                <Table.Th key={column}>{column}</Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {upload.sample.map((row, i) => (
              <Table.Tr key={i}>
                {upload.columns.map((column) => (
                  <Table.Td key={column} maw={320} style={{ overflowWrap: 'anywhere' }}>
                    {cell(row[column])}
                  </Table.Td>
                ))}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollArea>
    </Stack>
  );
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
