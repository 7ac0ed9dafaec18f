// Evaluate a model (a job's adapter or merged model, or a base model) on a processed dataset: its metrics and the
// per-sample table of prompt, reference and prediction.
import { useState, type FormEvent } from 'react';
import { Button, Card, Group, MultiSelect, NativeSelect, NumberInput, SimpleGrid, Stack, Switch, Table, Text, Title } from '@mantine/core';
import { useSearch } from 'wouter';
import { api } from '../../api/client.ts';
import type { DatasetList, EvaluationResult, JobList } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatNumber } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';

const TASKS = ['general', 'conversation', 'qa', 'summarization', 'translation', 'classification'];
const METRICS = ['rouge', 'bleu', 'meteor', 'bertscore', 'exact_match', 'f1', 'accuracy', 'precision', 'recall'];

export function EvaluationPage() {
  const fromJob = new URLSearchParams(useSearch()).get('job') ?? '';
  const jobs = useLoad((signal) => api<JobList>('training', '/jobs', { signal }), []);
  const datasets = useLoad((signal) => api<DatasetList>('preprocessing', '/datasets', { signal }), []);
  const [source, setSource] = useState<'adapter' | 'merged' | 'base'>('adapter');
  const [jobId, setJobId] = useState(fromJob);
  const [datasetId, setDatasetId] = useState('');
  const [task, setTask] = useState('general');
  const [metrics, setMetrics] = useState<string[]>([]);
  const [maxSamples, setMaxSamples] = useState<number | string>(20);
  const [samples, setSamples] = useState<number | string>(5);
  const [maxTokens, setMaxTokens] = useState<number | string>(64);
  const [fast, setFast] = useState(false);
  const [result, setResult] = useState<EvaluationResult>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const completed = (jobs.data?.jobs ?? []).filter((j) => j.status === 'completed');
  const job = completed.find((j) => j.job_id === jobId) ?? (source !== 'base' ? completed[0] : undefined);
  const ready = (datasets.data?.datasets ?? []).filter((d) => d.status === 'ready');
  const dataset = datasetId || job?.processed_dataset_id || ready[0]?.processed_dataset_id || '';

  const run = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      setResult(
        await api<EvaluationResult>('inference', '/evaluation', {
          json: {
            model_source: source,
            ...(source === 'base' ? { base_model_id: job?.base_model_id } : { job_id: job?.job_id }),
            dataset_id: dataset,
            ...(metrics.length > 0 ? { metrics } : { task_type: task }),
            max_samples: Number(maxSamples) || undefined,
            num_sample_results: Number(samples),
            max_new_tokens: Number(maxTokens),
            use_fast_engine: fast,
          },
        }),
      );
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Stack>
      <Title order={2}>Evaluation</Title>
      <ErrorAlert message={jobs.error ?? datasets.error} />
      <Card withBorder padding="lg" component="form" onSubmit={(e) => void run(e)} aria-label="Evaluation">
        <Stack>
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <NativeSelect
              label="Model"
              value={source}
              data={[
                { value: 'adapter', label: 'the job’s adapter' },
                { value: 'merged', label: 'the job’s merged model' },
                { value: 'base', label: 'the job’s base model' },
              ]}
              onChange={(e) => setSource(e.currentTarget.value as typeof source)}
            />
            <NativeSelect label="Job" value={job?.job_id ?? ''} data={[{ value: '', label: completed.length ? '— choose —' : 'no completed job yet' }, ...completed.map((j) => ({ value: j.job_id, label: `${j.job_name} (${j.base_model_id})` }))]} onChange={(e) => setJobId(e.currentTarget.value)} />
            <NativeSelect label="Dataset" description="its test split (train when there is none)" value={dataset} data={ready.map((d) => ({ value: d.processed_dataset_id, label: d.dataset_name }))} onChange={(e) => setDatasetId(e.currentTarget.value)} />
            <NativeSelect label="Task" description="the metric suite, unless metrics are chosen" value={task} data={TASKS} disabled={metrics.length > 0} onChange={(e) => setTask(e.currentTarget.value)} />
            <MultiSelect label="Metrics" description="instead of a task's suite" data={METRICS} value={metrics} onChange={setMetrics} clearable />
            <NumberInput label="Max samples" value={maxSamples} min={1} onChange={setMaxSamples} />
            <NumberInput label="Samples to show" value={samples} min={0} onChange={setSamples} />
            <NumberInput label="Max new tokens" value={maxTokens} min={1} onChange={setMaxTokens} />
            <Switch label="Fast engine (llama.cpp on the GGUF)" mt="lg" checked={fast} onChange={(e) => setFast(e.currentTarget.checked)} />
          </SimpleGrid>
          <ErrorAlert message={error} title="The evaluation failed" />
          <Group justify="flex-end">
            <Button type="submit" loading={busy} disabled={!job || !dataset}>
              Run evaluation
            </Button>
          </Group>
        </Stack>
      </Card>
      {result && <EvaluationView result={result} />}
    </Stack>
  );
}

function flatMetrics(metrics: EvaluationResult['metrics']): Array<[string, number]> {
  return Object.entries(metrics).flatMap(([name, value]) => (typeof value === 'number' ? [[name, value] as [string, number]] : Object.entries(value).map(([sub, v]) => [`${name}.${sub}`, v] as [string, number])));
}

function EvaluationView({ result }: { result: EvaluationResult }) {
  const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));
  return (
    <Card withBorder padding="lg" role="region" aria-label="Evaluation result">
      <Stack>
        <Title order={3} size="h4">
          {result.num_samples} samples scored
        </Title>
        {result.warnings.map((w, i) => (
          <Text key={i} size="sm" c="orange">
            {typeof w === 'string' ? w : `${w.metric}: ${w.error}`}
          </Text>
        ))}
        <SimpleGrid cols={{ base: 2, sm: 4 }} data-testid="evaluation-metrics">
          {flatMetrics(result.metrics).map(([name, value]) => (
            <Card key={name} withBorder padding="xs">
              <Text size="xs" c="dimmed">
                {name}
              </Text>
              <Text fw={600}>{formatNumber(value)}</Text>
            </Card>
          ))}
        </SimpleGrid>
        {result.notes?.map((n, i) => (
          <Text key={i} size="xs" c="dimmed">
            {n.metric}: {n.note}
          </Text>
        ))}
        <ScrollTable label="Per-sample results" minWidth={600} striped fz="sm" headers={['#', 'Prompt', 'Reference', 'Prediction']}>
              {result.samples.map((sample) => (
                <Table.Tr key={sample.sample_index}>
                  <Table.Td>{sample.sample_index}</Table.Td>
                  <Table.Td>{text(sample.input.filter((m) => m.role === 'user').at(-1)?.content ?? '')}</Table.Td>
                  <Table.Td>{sample.reference}</Table.Td>
                  <Table.Td>{sample.prediction}</Table.Td>
                </Table.Tr>
              ))}
        </ScrollTable>
      </Stack>
    </Card>
  );
}
