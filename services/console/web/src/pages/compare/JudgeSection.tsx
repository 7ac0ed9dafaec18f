// Judge two models: both answer the prompts of a processed dataset and an LLM judge says which answer of each pair is
// better, in both orders (POST /comparisons, which answers once a worker has done it all: tens of seconds or more).
// Then the result, and the caller's earlier comparisons to open again or delete.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Autocomplete, Button, Card, Group, NativeSelect, NumberInput, SimpleGrid, Stack, Table, Text, Textarea, Title } from '@mantine/core';
import { api } from '../../api/client.ts';
import { listModels } from '../../api/models.ts';
import type { Comparison, ComparisonList, DatasetList, TrainingJob } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ConfirmButton } from '../../components/ConfirmButton.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatDuration, formatTime } from '../../components/format.ts';
import { modelLabel, ModelPicker, modelRequest, type ModelChoice } from '../../components/ModelPicker.tsx';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { ComparisonView } from './ComparisonView.tsx';

const NO_MODEL: ModelChoice = { source: 'adapter', jobId: '', checkpoint: '', baseModel: '' };

/** Seconds since `busy` became true (0 while it is not). */
function useSeconds(busy: boolean): number {
  const [seconds, setSeconds] = useState(0);
  useEffect(() => {
    setSeconds(0);
    if (!busy) return;
    const started = Date.now();
    const ticker = setInterval(() => setSeconds(Math.round((Date.now() - started) / 1000)), 1000);
    return () => clearInterval(ticker);
  }, [busy]);
  return seconds;
}

export function JudgeSection({ jobs }: { jobs: TrainingJob[] }) {
  const datasets = useLoad((signal) => api<DatasetList>('preprocessing', '/datasets', { signal }), []);
  const models = useLoad((signal) => listModels(signal), []);
  const comparisons = useLoad((signal) => api<ComparisonList>('inference', '/comparisons', { signal }), []);
  const [modelA, setModelA] = useState(NO_MODEL);
  const [modelB, setModelB] = useState<ModelChoice>({ ...NO_MODEL, source: 'base' });
  const [datasetId, setDatasetId] = useState('');
  const [judge, setJudge] = useState('');
  const [criteria, setCriteria] = useState('');
  const [maxSamples, setMaxSamples] = useState<number | string>(20);
  const [maxTokens, setMaxTokens] = useState<number | string>(256);
  const [busy, setBusy] = useState(false);
  const seconds = useSeconds(busy);
  const [error, setError] = useState<string>();
  const [listError, setListError] = useState<string>();
  const [shown, setShown] = useState<Comparison>();
  const result = useRef<HTMLDivElement>(null);

  const completed = jobs.filter((j) => j.status === 'completed');
  const bases = models.data?.bases ?? [];
  const a = modelRequest(modelA, completed);
  const b = modelRequest(modelB, completed);
  const ready = (datasets.data?.datasets ?? []).filter((d) => d.status === 'ready');
  // By default the dataset model A's job trained on, when it is still there.
  const trainedOn = completed.find((j) => j.job_id === a?.job_id)?.processed_dataset_id;
  const dataset = datasetId || ready.find((d) => d.processed_dataset_id === trainedOn)?.processed_dataset_id || ready[0]?.processed_dataset_id || '';

  // An opened comparison is brought into view: it shows above the list it was opened from.
  useEffect(() => {
    if (shown) result.current?.scrollIntoView({ behavior: 'smooth', block: 'start' });
  }, [shown?.id]);

  const compare = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const comparison = await api<Comparison>('inference', '/comparisons', {
        json: {
          dataset_id: dataset,
          model_a: a,
          model_b: b,
          judge: { model: judge.trim(), ...(criteria.trim() ? { criteria: criteria.trim() } : {}) },
          ...(maxSamples === '' ? {} : { max_samples: Number(maxSamples) }),
          ...(maxTokens === '' ? {} : { max_new_tokens: Number(maxTokens) }),
        },
      });
      setShown(comparison);
      comparisons.reload();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const remove = async (id: string) => {
    setListError(undefined);
    try {
      await api('inference', `/comparisons/${encodeURIComponent(id)}`, { method: 'DELETE' });
      if (shown?.id === id) setShown(undefined);
      comparisons.reload();
    } catch (err) {
      setListError((err as Error).message);
    }
  };

  const earlier = comparisons.data?.comparisons ?? [];
  return (
    <Stack>
      <div>
        <Title order={3}>Judge two models</Title>
        <Text size="sm" c="dimmed">
          Both models answer the same prompts; an LLM judge says which answer of each pair is better, once with A’s answer first and once with B’s.
        </Text>
      </div>
      <Card withBorder padding="lg" component="form" onSubmit={(e) => void compare(e)} aria-label="Judge two models">
        <Stack>
          {/* Side by side only where each still has room for its three fields. */}
          <SimpleGrid cols={{ base: 1, xl: 2 }}>
            <ModelPicker legend="Model A" value={modelA} onChange={setModelA} jobs={completed} bases={bases} />
            <ModelPicker legend="Model B" value={modelB} onChange={setModelB} jobs={completed} bases={bases} />
          </SimpleGrid>
          <SimpleGrid cols={{ base: 1, sm: 2, md: 4 }}>
            <NativeSelect
              label="Dataset"
              description="its test split’s prompts (train when there is none)"
              value={dataset}
              data={ready.length ? ready.map((d) => ({ value: d.processed_dataset_id, label: d.dataset_name })) : [{ value: '', label: 'no processed dataset yet' }]}
              onChange={(e) => setDatasetId(e.currentTarget.value)}
            />
            <Autocomplete
              label="Judge model"
              description="a base model, one of your ft:… models, or a model at LLM_API_BASE"
              required
              value={judge}
              data={[...bases, ...(models.data?.tuned ?? [])]}
              onChange={setJudge}
            />
            <NumberInput label="Max samples" description="prompts compared at most" value={maxSamples} min={1} onChange={setMaxSamples} />
            <NumberInput label="Max new tokens" description="per answer of each model" value={maxTokens} min={1} onChange={setMaxTokens} />
          </SimpleGrid>
          <Textarea
            label="Criteria"
            description="what “better” means for this task (empty: correct, helpful, clear)"
            autosize
            minRows={1}
            value={criteria}
            onChange={(e) => setCriteria(e.currentTarget.value)}
          />
          <ErrorAlert message={error} title="The comparison failed" />
          <Group justify="flex-end">
            {busy && (
              <Text size="sm" c="dimmed" aria-live="polite">
                Comparing: {formatDuration(seconds)} so far
              </Text>
            )}
            <Button type="submit" loading={busy} disabled={!a || !b || !dataset || !judge.trim()}>
              Compare
            </Button>
          </Group>
        </Stack>
      </Card>
      <div ref={result}>{shown && <ComparisonView comparison={shown} jobs={jobs} />}</div>
      <Card withBorder padding="lg">
        <Stack>
          <Title order={4}>Your comparisons</Title>
          <ErrorAlert message={comparisons.error ?? listError} />
          {comparisons.data && earlier.length === 0 && <Text c="dimmed">None yet.</Text>}
          {earlier.length > 0 && (
            <ScrollTable label="Your comparisons" minWidth={720} fz="sm" headers={['Created', 'A', 'B', 'Judge', 'A: win / tie / loss', 'Winner', '']}>
              {earlier.map((c) => (
                <Table.Tr key={c.id} data-id={c.id} bg={shown?.id === c.id ? 'var(--mantine-color-indigo-0)' : undefined}>
                  <Table.Td>{formatTime(c.created_at)}</Table.Td>
                  <Table.Td>{modelLabel(c.model_a, jobs)}</Table.Td>
                  <Table.Td>{modelLabel(c.model_b, jobs)}</Table.Td>
                  <Table.Td>{c.judge.model}</Table.Td>
                  <Table.Td>
                    {c.counts.win} / {c.counts.tie} / {c.counts.loss}
                  </Table.Td>
                  <Table.Td>{c.winner ?? 'none'}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap" justify="flex-end">
                      <Button size="xs" variant="light" onClick={() => setShown(c)}>
                        Open
                      </Button>
                      <ConfirmButton size="xs" question="Delete this comparison with the answers and verdicts it holds?" confirmLabel="Delete comparison" onConfirm={() => remove(c.id)}>
                        Delete
                      </ConfirmButton>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </ScrollTable>
          )}
          {comparisons.data?.has_more && (
            <Text size="xs" c="dimmed">
              The newest {earlier.length} are listed.
            </Text>
          )}
        </Stack>
      </Card>
    </Stack>
  );
}
