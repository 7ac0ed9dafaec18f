// Exports: publish a job's adapter, merged model, GGUF or ONNX (to the blob store, or a hub repository): a completed
// job's final model, or one of the checkpoints any job stored (a failed, cancelled or paused job's too: the API's 409
// for such a job says to export a checkpoint); follow the export until it ends (an ONNX export's agreement with
// transformers per variant), and download the files. A Tinker run's sampler weights are exported from its page.
import { useState, type FormEvent } from 'react';
import { Badge, Button, Card, Group, MultiSelect, NativeSelect, PasswordInput, SimpleGrid, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useSearch } from 'wouter';
import { api, downloadFile } from '../../api/client.ts';
import type { CheckpointList, ExportCreateResult, ExportList, JobList, TrainingJob } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatNumber, formatTime } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { isTinkerRun } from '../training/tinker-run.ts';
import { onnxChoices } from './onnx-variants.ts';
import { useFollowExport } from './use-follow-export.ts';

const FILE_TYPES = ['adapter', 'merged', 'gguf', 'onnx'] as const;
/** What an ONNX export may write beside fp32 (POST /exports onnx_variants; all three unless fewer are chosen). */
const ONNX_EXTRA_VARIANTS = ['fp16', 'q4', 'q4f16'] as const;
/** A job with a model to export: its final one once completed, or a checkpoint it stored (while it trains, paused, or
 *  after it failed). */
const HAS_MODELS: ReadonlySet<TrainingJob['status']> = new Set(['completed', 'training', 'paused', 'failed']);

export function ExportsPage() {
  const fromJob = new URLSearchParams(useSearch()).get('job') ?? '';
  const jobs = useLoad((signal) => api<JobList>('training', '/jobs', { signal }), []);
  const exports = useLoad((signal) => api<ExportList>('export', '/exports', { signal }), []);
  const [jobId, setJobId] = useState(fromJob);
  /** A checkpoint's step; empty: the final model of a completed job, else its latest checkpoint. */
  const [checkpoint, setCheckpoint] = useState('');
  const [type, setType] = useState('adapter');
  const [quantization, setQuantization] = useState('q8_0');
  const [onnxVariants, setOnnxVariants] = useState<string[]>([...ONNX_EXTRA_VARIANTS]);
  const [destination, setDestination] = useState<string[]>(['cloud']);
  const [hubRepo, setHubRepo] = useState('');
  const [hubToken, setHubToken] = useState('');
  const [error, setError] = useState<string>();

  const exportable = (jobs.data?.jobs ?? []).filter((j) => HAS_MODELS.has(j.status) && !isTinkerRun(j));
  const job = jobId || exportable.find((j) => j.status === 'completed')?.job_id || '';
  const completed = exportable.find((j) => j.job_id === job)?.status === 'completed';
  const checkpoints = useLoad((signal) => (job ? api<CheckpointList>('training', `/jobs/${encodeURIComponent(job)}/checkpoints`, { signal }) : Promise.resolve({ checkpoints: [] })), [job]);
  const steps = (checkpoints.data?.checkpoints ?? []).map((c) => c.step);
  const step = checkpoint || (completed || steps.length === 0 ? '' : String(Math.max(...steps)));
  const { reload } = exports;

  // The export runs as a job: its record is looked at every second until it has completed or failed.
  const followed = useFollowExport(reload);

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    followed.reset();
    try {
      const hub = destination.includes('hub');
      const created = await api<ExportCreateResult>('export', '/exports', {
        json: { job_id: job, export_type: type, destination, ...(step ? { checkpoint_step: Number(step) } : {}), ...(type === 'gguf' ? { gguf_quantization: quantization } : {}), ...(type === 'onnx' ? { onnx_variants: onnxVariants } : {}), ...(hub ? { hub_repo_id: hubRepo, hub_token: hubToken } : {}) },
      });
      followed.follow(job, created.export_id);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const record = followed.current?.latest_export;
  const following = followed.following;
  // A checkpoint's files are not among the job's (the table below): its export's own download.
  const downloadCheckpoint = () => {
    if (!record?.checkpoint_step) return;
    const query = new URLSearchParams({ type: record.type, checkpoint_step: String(record.checkpoint_step) });
    void downloadFile('export', `/exports/${encodeURIComponent(record.job_id)}/download?${query}`).catch((err: Error) => setError(err.message));
  };
  return (
    <Stack>
      <Title order={2}>Exports</Title>
      <ErrorAlert message={jobs.error ?? exports.error} />
      <Card withBorder padding="lg" component="form" onSubmit={(e) => void create(e)} aria-label="New export">
        <Stack>
          <Title order={3} size="h4">
            Export a model
          </Title>
          <SimpleGrid cols={{ base: 1, sm: 2, md: 3 }}>
            <NativeSelect
              label="Job"
              value={job}
              data={[{ value: '', label: exportable.length ? '— choose —' : 'no job with a model yet' }, ...exportable.map((j) => ({ value: j.job_id, label: j.status === 'completed' ? j.job_name : `${j.job_name} (${j.status})` }))]}
              // Another job has other checkpoints: back to its default.
              onChange={(e) => {
                setJobId(e.currentTarget.value);
                setCheckpoint('');
              }}
            />
            <NativeSelect
              label="Model"
              value={step}
              error={checkpoints.error}
              data={[
                ...(completed ? [{ value: '', label: 'the final model' }] : steps.length === 0 ? [{ value: '', label: checkpoints.data ? 'no stored checkpoint' : '…' }] : []),
                ...(checkpoints.data?.checkpoints ?? []).map((c) => ({ value: String(c.step), label: `checkpoint at step ${c.step}${c.train_loss == null ? '' : ` (loss ${formatNumber(c.train_loss)})`}` })),
              ]}
              onChange={(e) => setCheckpoint(e.currentTarget.value)}
            />
            <NativeSelect label="What" value={type} data={[{ value: 'adapter', label: 'adapter' }, { value: 'merged', label: 'merged model' }, { value: 'gguf', label: 'GGUF (llama.cpp, Ollama)' }, { value: 'onnx', label: 'ONNX (ONNX Runtime, transformers.js)' }]} onChange={(e) => setType(e.currentTarget.value)} />
            {type === 'gguf' && <NativeSelect label="GGUF quantization" value={quantization} data={['q8_0', 'q4_k_m', 'f16', 'bf16']} onChange={(e) => setQuantization(e.currentTarget.value)} />}
            {type === 'onnx' && <MultiSelect label="ONNX variants" description="beside fp32, which is always written" data={[...ONNX_EXTRA_VARIANTS]} value={onnxVariants} onChange={setOnnxVariants} />}
            <MultiSelect label="Destination" data={['cloud', 'hub']} value={destination} onChange={setDestination} />
            {destination.includes('hub') && (
              <>
                <TextInput label="Hub repository" placeholder="owner/name" value={hubRepo} onChange={(e) => setHubRepo(e.currentTarget.value)} />
                <PasswordInput label="Hub token" description="never stored" value={hubToken} onChange={(e) => setHubToken(e.currentTarget.value)} autoComplete="off" />
              </>
            )}
          </SimpleGrid>
          <ErrorAlert message={error ?? followed.error} title="The export was refused" />
          <Group justify="space-between">
            <Text size="sm" data-testid="export-status" aria-live="polite">
              {record ? (
                <>
                  Latest export: <StatusBadge status={record.status} /> {record.type}
                  {record.checkpoint_step ? ` of step ${record.checkpoint_step}` : ''} · {record.message ?? ''}
                </>
              ) : following ? (
                'Starting…'
              ) : null}
            </Text>
            <Group gap="xs">
              {record?.status === 'completed' && record.checkpoint_step && record.artifacts.some((a) => a.variant === 'file') && (
                <Button variant="light" onClick={downloadCheckpoint}>
                  Download {record.type} of step {record.checkpoint_step}
                </Button>
              )}
              <Button type="submit" loading={following} disabled={!job || destination.length === 0 || (!completed && !step)}>
                Export
              </Button>
            </Group>
          </Group>
          {record?.parity && (
            <ScrollTable label="ONNX agreement with transformers" minWidth={420} headers={['Variant', 'Greedy tokens equal to transformers', 'First divergence', 'Use']}>
              {record.parity.map((p) => (
                <Table.Tr key={p.variant}>
                  <Table.Td>{p.variant}</Table.Td>
                  <Table.Td>{Math.round(p.agreement * 100)}% of {p.prompts} × {p.tokens_per_prompt} ({p.execution_provider})</Table.Td>
                  <Table.Td>{p.first_divergence ? `prompt ${p.first_divergence.prompt + 1}, token ${p.first_divergence.token + 1}` : 'none'}</Table.Td>
                  <Table.Td>
                    <Badge color={p.usable ? 'green' : 'red'}>{p.usable ? 'usable' : 'not usable'}</Badge>
                  </Table.Td>
                </Table.Tr>
              ))}
            </ScrollTable>
          )}
        </Stack>
      </Card>
      <Card withBorder padding="lg">
        <Title order={3} size="h4" mb="sm">
          Downloadable files
        </Title>
        {exports.data?.length === 0 && <Text c="dimmed">No job has exported files yet.</Text>}
        {exports.data && exports.data.length > 0 && (
          <ScrollTable label="Exported files" minWidth={520} headers={['Job', 'Base model', 'Files', 'On the hub']}>
                {exports.data.map((entry) => (
                  <Table.Tr key={entry.job_id}>
                    <Table.Td>{entry.job_name}</Table.Td>
                    <Table.Td>{entry.base_model_id}</Table.Td>
                    <Table.Td>
                      <Group gap={4}>
                        {FILE_TYPES.filter((t) => entry.artifacts.file[t]).map((t) => (
                          <Button key={t} size="compact-sm" variant="light" onClick={() => void downloadFile('export', `/exports/${encodeURIComponent(entry.job_id)}/download?type=${t}`).catch((err: Error) => setError(err.message))}>
                            Download {t}
                          </Button>
                        ))}
                        {/* one model file each, beside the folder's archive; an unusable one says so */}
                        {onnxChoices(entry).map((c) => (
                          <Button key={c.variant} size="compact-sm" variant="subtle" color={c.usable === false ? 'red' : undefined} title={c.hint} onClick={() => void downloadFile('export', `/exports/${encodeURIComponent(entry.job_id)}/download?type=onnx&variant=${c.variant}`).catch((err: Error) => setError(err.message))}>
                            {c.label}
                          </Button>
                        ))}
                      </Group>
                    </Table.Td>
                    <Table.Td>
                      {FILE_TYPES.filter((t) => entry.artifacts.hub[t]).map((t) => (
                        <Badge key={t} variant="outline" tt="none" component="a" href={entry.artifacts.hub[t]!} target="_blank" rel="noreferrer">
                          {t}
                        </Badge>
                      ))}
                    </Table.Td>
                  </Table.Tr>
                ))}
          </ScrollTable>
        )}
        {record?.finished_at && (
          <Text size="xs" c="dimmed" mt="xs">
            last export finished {formatTime(record.finished_at)}
          </Text>
        )}
      </Card>
    </Stack>
  );
}
