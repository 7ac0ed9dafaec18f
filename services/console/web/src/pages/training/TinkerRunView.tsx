// A Tinker training run's page: the user's own training loop (the tinker SDK) trains it on our workers, so there is no
// dataset, hyperparameter, curve or ETA to show, and nothing to pause or resume (a worker lets an idle run go by itself;
// the next call from the SDK takes it again). What it is (model_id, session, base model, LoRA), how far it got (optim
// steps, last loss), what it is doing, and the weights it saved: each sampler weights a model on /v1 and exportable.
// Cancel and delete as for a job.
import { useEffect, useState, type ReactNode } from 'react';
import { Anchor, Badge, Button, Card, Group, Menu, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { Link, useLocation } from 'wouter';
import { api, downloadFile } from '../../api/client.ts';
import type { CheckpointList, ExportCreateResult, JobDeleteResult, TrainingJob } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ConfirmButton } from '../../components/ConfirmButton.tsx';
import { Copyable } from '../../components/Copyable.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatBytes, formatNumber, formatTime } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { Stat } from '../../components/Stat.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useFollowExport } from '../exports/use-follow-export.ts';
import { loraLayers, runActions, runState, runStatusLabel, tinkerConfigOf, tinkerModelName, weightsKindLabel } from './tinker-run.ts';

const EXPORT_TYPES = [
  { type: 'adapter', label: 'adapter' },
  { type: 'merged', label: 'merged model' },
  { type: 'gguf', label: 'GGUF (llama.cpp, Ollama)' },
  { type: 'onnx', label: 'ONNX (ONNX Runtime, transformers.js)' },
] as const;

const NOWRAP = { whiteSpace: 'nowrap' } as const;

/** How often an open run is looked at again: the SDK drives it from elsewhere (steps, saves, going idle, resuming). */
const LOOK_EVERY_MS = 5000;

export function TinkerRunView({ run, error, reload }: { run: TrainingJob; error: string | undefined; reload: () => void }) {
  const [, navigate] = useLocation();
  const id = run.job_id;
  const config = tinkerConfigOf(run)!;
  const weights = useLoad((signal) => api<CheckpointList>('training', `/jobs/${encodeURIComponent(id)}/checkpoints`, { signal }), [id]);
  const [actionError, setActionError] = useState<string>();
  const [cancelling, setCancelling] = useState(false);

  const ended = run.status === 'failed';
  const reloadWeights = weights.reload;
  useEffect(() => {
    if (ended) return;
    const timer = setInterval(() => {
      reload();
      reloadWeights();
    }, LOOK_EVERY_MS);
    return () => clearInterval(timer);
  }, [ended, reload, reloadWeights]);

  // Its latest export, as the Exports page follows one: read once on opening, and followed while it runs.
  const exports = useFollowExport();
  const { follow } = exports;
  useEffect(() => {
    follow(id);
  }, [id, follow]);
  const [exportError, setExportError] = useState<string>();
  const [exporting, setExporting] = useState<string>();
  const startExport = async (name: string, type: string) => {
    setExportError(undefined);
    setExporting(name);
    exports.reset();
    try {
      const created = await api<ExportCreateResult>('export', '/exports', { json: { job_id: id, checkpoint_name: name, export_type: type } });
      exports.follow(id, created.export_id);
    } catch (err) {
      setExportError((err as Error).message);
      setExporting(undefined);
    }
  };
  const record = exports.current?.latest_export;
  const download = () => {
    if (!record?.checkpoint_name) return;
    const query = new URLSearchParams({ type: record.type, checkpoint_name: record.checkpoint_name });
    void downloadFile('export', `/exports/${encodeURIComponent(id)}/download?${query}`).catch((err: Error) => setExportError(err.message));
  };

  const can = runActions(run);
  const cancel = async () => {
    setCancelling(true);
    setActionError(undefined);
    try {
      await api<TrainingJob>('training', `/jobs/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
      reload();
    } catch (err) {
      setActionError((err as Error).message);
    } finally {
      setCancelling(false);
    }
  };
  const remove = async () => {
    try {
      await api<JobDeleteResult>('training', `/jobs/${encodeURIComponent(id)}`, { method: 'DELETE' });
      navigate('/training');
    } catch (err) {
      setActionError((err as Error).message);
    }
  };

  const saved = weights.data?.checkpoints ?? [];
  return (
    <Stack>
      <Anchor component={Link} href="/training" size="sm">
        ← Training
      </Anchor>
      <ErrorAlert message={error} />
      <Group justify="space-between" wrap="wrap">
        <Group gap="sm">
          <Title order={2}>{config.model_id}</Title>
          <Badge variant="outline" tt="none" data-testid="trainer">
            tinker
          </Badge>
          <StatusBadge status={runStatusLabel(run)} />
        </Group>
        <Group gap="xs">
          {can.cancel && (
            <Button color="orange" variant="light" loading={cancelling} onClick={() => void cancel()}>
              Cancel
            </Button>
          )}
          {can.remove && (
            <ConfirmButton question="Delete this run with its saved weights, exports and evaluations?" confirmLabel="Delete run" onConfirm={remove}>
              Delete
            </ConfirmButton>
          )}
        </Group>
      </Group>
      <Text size="sm" c="dimmed">
        Tinker training run {id} · created {formatTime(run.created_at)}
        {run.parent && (
          <>
            {' · continued from '}
            <Anchor component={Link} href={`/training/${run.parent.job_id}`} size="sm">
              {run.parent.job_id}
            </Anchor>
          </>
        )}
      </Text>
      <ErrorAlert message={actionError} />
      <Card withBorder aria-label="Tinker run" component="section">
        <Stack gap="sm">
          <Text size="sm" data-testid="run-state" c={run.status === 'failed' ? 'red' : undefined}>
            <Text span fw={600} inherit>
              State:{' '}
            </Text>
            {runState(run)}
          </Text>
          <SimpleGrid cols={{ base: 2, sm: 4 }} data-testid="job-stats">
            <Stat label="optim steps" value={String(run.progress?.step ?? 0)} />
            <Stat label="last loss" value={formatNumber(run.progress?.loss)} />
            <Stat label="LoRA rank" value={String(config.lora.rank)} />
            <Stat label="saved weights" value={weights.data ? String(saved.length) : '—'} />
          </SimpleGrid>
          <Table fz="sm" aria-label="Run settings">
            <Table.Tbody>
              <Row label="model_id">
                <Copyable value={config.model_id} label="model_id" />
              </Row>
              <Row label="session_id">
                <Copyable value={config.session_id} label="session_id" />
              </Row>
              <Row label="base model">{config.base_model_id}</Row>
              <Row label="LoRA">
                rank {config.lora.rank} · trains {loraLayers(config.lora)}
                {config.lora.seed !== null && config.lora.seed !== undefined ? ` · seed ${config.lora.seed}` : ''}
              </Row>
            </Table.Tbody>
          </Table>
        </Stack>
      </Card>
      <Card withBorder aria-label="Saved weights" component="section">
        <Title order={3} size="h4" mb="sm">
          Saved weights
        </Title>
        <ErrorAlert message={weights.error} />
        {weights.data && saved.length === 0 && <Text c="dimmed">None yet: the SDK’s save_state and save_weights_for_sampler save them.</Text>}
        {saved.length > 0 && (
          <ScrollTable label="Saved weights" minWidth={1000} headers={['Name', 'Kind', 'Step', 'Size', 'Saved at', 'tinker_path', 'Model on /v1', '']}>
            {saved.map((w) => {
              const sampler = w.kind === 'sampler_weights' && w.name !== undefined;
              return (
                <Table.Tr key={w.tinker_path ?? `${w.kind}:${w.name}:${w.step}`} data-name={w.name}>
                  <Table.Td>{w.name ?? '—'}</Table.Td>
                  <Table.Td miw={90}>
                    <Badge variant="light" color={sampler ? 'indigo' : 'gray'} tt="none">
                      {weightsKindLabel(w.kind)}
                    </Badge>
                  </Table.Td>
                  <Table.Td>{w.step}</Table.Td>
                  <Table.Td style={NOWRAP}>{formatBytes(w.size_bytes)}</Table.Td>
                  <Table.Td>{formatTime(w.created_at)}</Table.Td>
                  <Table.Td>{w.tinker_path ? <Copyable value={w.tinker_path} label={`tinker_path of ${w.name ?? 'these weights'}`} /> : '—'}</Table.Td>
                  <Table.Td>{sampler ? <Copyable value={tinkerModelName(id, w.name!)} label={`model name of ${w.name}`} /> : '—'}</Table.Td>
                  <Table.Td style={NOWRAP}>
                    {sampler && (
                      <Menu position="bottom-end" withinPortal>
                        <Menu.Target>
                          <Button size="compact-sm" variant="light" loading={exports.following && exporting === w.name} disabled={exports.following} aria-label={`Export ${w.name}`}>
                            Export
                          </Button>
                        </Menu.Target>
                        <Menu.Dropdown>
                          {EXPORT_TYPES.map((t) => (
                            <Menu.Item key={t.type} onClick={() => void startExport(w.name!, t.type)}>
                              {t.label}
                            </Menu.Item>
                          ))}
                        </Menu.Dropdown>
                      </Menu>
                    )}
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </ScrollTable>
        )}
        <ErrorAlert message={exportError} title="The export was refused" />
        <ErrorAlert message={exports.error} title="Its exports could not be read" />
        <Group justify="space-between" mt="xs" wrap="wrap">
          <Text size="sm" data-testid="export-status" aria-live="polite">
            {record ? (
              <>
                Latest export: <StatusBadge status={record.status} /> {record.type}
                {record.checkpoint_name ? ` of ${record.checkpoint_name}` : ''} · {record.message ?? ''}
              </>
            ) : exports.following && exporting ? (
              'Starting…'
            ) : null}
          </Text>
          {record?.status === 'completed' && record.checkpoint_name && record.artifacts.some((a) => a.variant === 'file') && (
            <Button size="compact-sm" variant="light" onClick={download}>
              Download {record.type}
            </Button>
          )}
        </Group>
      </Card>
    </Stack>
  );
}

function Row({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Table.Tr>
      <Table.Th w={140}>{label}</Table.Th>
      <Table.Td>{children}</Table.Td>
    </Table.Tr>
  );
}
