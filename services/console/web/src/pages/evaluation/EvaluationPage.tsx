// Evaluate a model (a job's adapter or merged model, or a base model) on a processed dataset, by default beside the
// job's base model on the same samples: the metrics (graders' means among them) and the per-sample table of prompt,
// reference and predictions with their grades. Below, standard benchmarks run in the background (BenchmarksSection.tsx).
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Button, Card, Divider, Group, MultiSelect, NativeSelect, NumberInput, SimpleGrid, Stack, Switch, Text, Textarea, Title } from '@mantine/core';
import { useSearch } from 'wouter';
import { api } from '../../api/client.ts';
import type { DatasetList, EvaluationResult, JobList } from '../../api/types.ts';
import { watchJobLog } from '../../api/job-events.ts';
import { useLoad } from '../../api/use-load.ts';
import { formatDuration } from '../../components/format.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { CODE_INPUT } from '../../components/code-input.ts';
import { BenchmarksSection } from './BenchmarksSection.tsx';
import { EvaluationView, type EvaluationRun } from './EvaluationView.tsx';

const TASKS = ['general', 'conversation', 'qa', 'summarization', 'translation', 'classification'];
const METRICS = ['rouge', 'bleu', 'meteor', 'bertscore', 'exact_match', 'f1', 'accuracy', 'precision', 'recall'];
const GRADERS_EXAMPLE = JSON.stringify([{ type: 'text_similarity', name: 'close', input: '{{sample.output_text}}', reference: '{{item.reference}}', evaluation_metric: 'fuzzy_match' }], null, 2);

/** The graders typed as JSON: a list (or one grader), undefined when empty; what does not parse is an error to show. */
function parseGraders(text: string): { graders?: unknown[]; error?: string } {
  if (!text.trim()) return {};
  try {
    const value = JSON.parse(text) as unknown;
    return { graders: Array.isArray(value) ? value : [value] };
  } catch (err) {
    return { error: `Graders are not JSON: ${(err as Error).message}` };
  }
}

const WAITS = 'an evaluation waits: ';

/** While `busy`: the time so far and what the evaluation waits for, as the worker tells the job's log (a cold model
 *  loading: tens of seconds on a CPU, #39). */
function useWaitNews(busy: boolean, jobId: string | undefined): string | undefined {
  const [news, setNews] = useState<string>();
  const [seconds, setSeconds] = useState(0);
  useEffect(() => {
    setNews(undefined);
    setSeconds(0);
    if (!busy) return;
    const started = Date.now();
    const ticker = setInterval(() => setSeconds(Math.round((Date.now() - started) / 1000)), 1000);
    const controller = new AbortController();
    if (jobId) void watchJobLog(jobId, controller.signal, (message) => message.startsWith(WAITS) && setNews(message.slice(WAITS.length)));
    return () => {
      clearInterval(ticker);
      controller.abort();
    };
  }, [busy, jobId]);
  if (!busy) return undefined;
  return `Evaluating: ${formatDuration(seconds)} so far${news ? `; waiting for ${news}` : ''}`;
}

export function EvaluationPage() {
  const fromJob = new URLSearchParams(useSearch()).get('job') ?? '';
  const jobs = useLoad((signal) => api<JobList>('training', '/jobs', { signal }), []);
  const datasets = useLoad((signal) => api<DatasetList>('preprocessing', '/datasets', { signal }), []);
  const [source, setSource] = useState<'adapter' | 'merged' | 'base'>('adapter');
  const [jobId, setJobId] = useState(fromJob);
  const [datasetId, setDatasetId] = useState('');
  const [task, setTask] = useState('general');
  const [metrics, setMetrics] = useState<string[]>([]);
  const [gradersText, setGradersText] = useState('');
  const [maxSamples, setMaxSamples] = useState<number | string>(20);
  const [samples, setSamples] = useState<number | string>(5);
  const [maxTokens, setMaxTokens] = useState<number | string>(64);
  const [fast, setFast] = useState(false);
  const [compareBase, setCompareBase] = useState(true);
  const [result, setResult] = useState<{ tuned?: EvaluationRun; base?: EvaluationRun }>();
  const [error, setError] = useState<string>();
  const [baseError, setBaseError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const completed = (jobs.data?.jobs ?? []).filter((j) => j.status === 'completed');
  const job = completed.find((j) => j.job_id === jobId) ?? (source !== 'base' ? completed[0] : undefined);
  const waiting = useWaitNews(busy, source === 'base' ? undefined : job?.job_id);
  const ready = (datasets.data?.datasets ?? []).filter((d) => d.status === 'ready');
  const dataset = datasetId || job?.processed_dataset_id || ready[0]?.processed_dataset_id || '';

  // The base model is evaluated beside a tuned one on the same samples, unless it is what is evaluated; its result is
  // kept per request, so evaluating another job (or checkpoint) against the same base does not run it again.
  const withBase = compareBase && source !== 'base';
  const baseRuns = useRef(new Map<string, EvaluationResult>());

  const run = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setBaseError(undefined);
    setResult(undefined);
    const { graders, error: gradersError } = parseGraders(gradersText);
    if (gradersError) {
      setError(gradersError);
      setBusy(false);
      return;
    }
    const settings = {
      dataset_id: dataset,
      ...(metrics.length > 0 ? { metrics } : { task_type: task }),
      ...(graders ? { graders } : {}),
      max_samples: Number(maxSamples) || undefined,
      num_sample_results: Number(samples),
      max_new_tokens: Number(maxTokens),
      use_fast_engine: fast,
    };
    const evaluate = (body: object) => api<EvaluationResult>('inference', '/evaluation', { json: body });
    const baseBody = { model_source: 'base', base_model_id: job?.base_model_id, ...settings };
    const baseKey = JSON.stringify(baseBody);
    const [tuned, base] = await Promise.allSettled([
      evaluate(source === 'base' ? baseBody : { model_source: source, job_id: job?.job_id, ...settings }),
      withBase ? (baseRuns.current.get(baseKey) ?? evaluate(baseBody)) : Promise.resolve(undefined),
    ]);
    if (base.status === 'fulfilled' && base.value) baseRuns.current.set(baseKey, base.value);
    if (tuned.status === 'rejected') setError((tuned.reason as Error).message);
    if (base.status === 'rejected') setBaseError((base.reason as Error).message);
    setResult({
      ...(tuned.status === 'fulfilled' ? { tuned: { label: source === 'base' ? 'base' : `tuned (${source})`, result: tuned.value } } : {}),
      ...(base.status === 'fulfilled' && base.value ? { base: { label: 'base', result: base.value } } : {}),
    });
    setBusy(false);
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
            <Textarea
              label="Graders"
              description="OpenAI grader objects (JSON): string_check, text_similarity, python, multi; {{item.reference}} is the reference answer"
              placeholder={GRADERS_EXAMPLE}
              autosize
              minRows={2}
              styles={CODE_INPUT}
              value={gradersText}
              onChange={(e) => setGradersText(e.currentTarget.value)}
            />
            <NumberInput label="Max samples" value={maxSamples} min={1} onChange={setMaxSamples} />
            <NumberInput label="Samples to show" value={samples} min={0} onChange={setSamples} />
            <NumberInput label="Max new tokens" value={maxTokens} min={1} onChange={setMaxTokens} />
            <Switch label="Fast engine (llama.cpp on the GGUF)" mt="lg" checked={fast} onChange={(e) => setFast(e.currentTarget.checked)} />
            <Switch label="Beside the base model" description="evaluates the job’s base model on the same samples too" mt="lg" checked={withBase} disabled={source === 'base'} onChange={(e) => setCompareBase(e.currentTarget.checked)} />
          </SimpleGrid>
          <ErrorAlert message={error} title="The evaluation failed" />
          <ErrorAlert message={baseError} title="The base model’s evaluation failed" />
          <Group justify="flex-end">
            {waiting && (
              <Text size="sm" c="dimmed" aria-live="polite">
                {waiting}
              </Text>
            )}
            <Button type="submit" loading={busy} disabled={!job || !dataset}>
              Run evaluation
            </Button>
          </Group>
        </Stack>
      </Card>
      {result?.tuned && <EvaluationView tuned={result.tuned} base={result.base} />}
      <Divider my="md" />
      <BenchmarksSection jobs={completed} fromJob={fromJob} />
    </Stack>
  );
}
