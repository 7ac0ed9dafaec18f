// Upload a raw dataset file with a progress bar, then show what the service read: rows, columns, the delimiter, any
// warnings and the first rows. The delimiter is detected by the service unless chosen here (the file is sent again).
import { useState } from 'react';
import { Alert, Badge, Card, FileInput, Group, NativeSelect, Progress, ScrollArea, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { uploadWithProgress } from '../../api/client.ts';
import type { UploadResult } from '../../api/types.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatBytes, plural } from '../../components/format.ts';

const DELIMITER_CHOICES = [
  { value: '', label: 'Detect from the file' },
  { value: ',', label: 'Comma ,' },
  { value: ';', label: 'Semicolon ;' },
  { value: '\t', label: 'Tab' },
  { value: '|', label: 'Pipe |' },
];

const delimiterName = (delimiter: string) => DELIMITER_CHOICES.find((c) => c.value === delimiter)?.label.toLowerCase() ?? JSON.stringify(delimiter);

export function UploadCard({ upload, onUploaded }: { upload: UploadResult | undefined; onUploaded: (upload: UploadResult | undefined) => void }) {
  const [progress, setProgress] = useState<number>();
  const [error, setError] = useState<string>();
  const [file, setFile] = useState<File | null>(null);
  const [delimiter, setDelimiter] = useState('');

  const send = async (chosen: File | null, chosenDelimiter = delimiter) => {
    setFile(chosen);
    setError(undefined);
    onUploaded(undefined);
    if (!chosen) return setProgress(undefined);
    setProgress(0);
    try {
      const fields: Record<string, string> = chosenDelimiter ? { delimiter: chosenDelimiter } : {};
      onUploaded(await uploadWithProgress<UploadResult>('preprocessing', '/datasets/upload', chosen, setProgress, fields));
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
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <FileInput label="Dataset file" placeholder="Choose a file" value={file} onChange={(f) => void send(f)} clearable accept=".csv,.tsv,.txt,.json,.jsonl,.parquet,text/csv,application/json" />
          <NativeSelect
            label="Delimiter (CSV and TSV)"
            value={delimiter}
            data={DELIMITER_CHOICES}
            onChange={(e) => {
              const chosen = e.currentTarget.value;
              setDelimiter(chosen);
              if (file) void send(file, chosen);
            }}
          />
        </SimpleGrid>
        {percent !== undefined && (
          <Stack gap={4}>
            {/* a refused or broken upload is red, never a full blue bar beside "upload failed" (#39) */}
            <Progress
              value={percent}
              size="lg"
              color={error ? 'red' : undefined}
              animated={percent < 100 && !error}
              aria-label="Upload progress"
              data-testid="upload-progress"
              data-state={error ? 'failed' : upload ? 'stored' : 'sending'}
            />
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
        <b>{upload.filename}</b> · {formatBytes(upload.size_bytes)} · {plural(upload.num_examples, 'row')}
        {upload.delimiter !== null && <> · read with {delimiterName(upload.delimiter)}</>}
      </Text>
      {upload.warnings.map((warning) => (
        <Alert key={warning} color="yellow" title="Check how the file was read" data-testid="upload-warning">
          {warning}
        </Alert>
      ))}
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
