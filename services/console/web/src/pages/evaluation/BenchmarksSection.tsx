// Benchmarks: lm-evaluation-harness tasks and/or HumanEval on a model, run by a worker in the background (POST
// /evaluations). The caller's runs are listed with their status, followed over their event streams while they are
// queued or running, and can be cancelled, opened (the log, the error, the numbers beside the base model's) and deleted.
import { useEffect, useState, type FormEvent } from 'react';
import { Button, Card, Checkbox, Group, NumberInput, SimpleGrid, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { api } from '../../api/client.ts';
import { followEvaluation, type EvaluationNews } from '../../api/evaluation-events.ts';
import { listModels } from '../../api/models.ts';
import type { Evaluation, EvaluationList, TrainingJob } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ConfirmButton } from '../../components/ConfirmButton.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatTime } from '../../components/format.ts';
import { modelLabel, ModelPicker, modelRequest, type ModelChoice } from '../../components/ModelPicker.tsx';
import { ScrollTable } from '../../components/ScrollTable.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { BenchmarkRun } from './BenchmarkRun.tsx';

const ACTIVE = ['queued', 'running'];

/** A number field's value for the request: left out (undefined, which JSON drops) when empty. */
const given = (value: number | string) => (value === '' ? undefined : Number(value));

const benchmarksOf = (e: Evaluation) => [...(e.request.benchmarks?.tasks ?? []), ...(e.request.benchmarks?.humaneval ? ['humaneval'] : [])].join(', ');

/** The news of each evaluation in `ids` from its event stream (replayed, then live until it ends). */
function useEvaluationNews(ids: string[]): { news: Record<string, EvaluationNews>; error: string | undefined } {
  const [news, setNews] = useState<Record<string, EvaluationNews>>({});
  const [error, setError] = useState<string>();
  const key = ids.join(' ');
  useEffect(() => {
    const controller = new AbortController();
    for (const id of ids) {
      followEvaluation(id, controller.signal, (update) => setNews((all) => ({ ...all, [id]: update }))).catch((err: Error) => setError(err.message));
    }
    return () => controller.abort();
  }, [key]);
  return { news, error };
}

export function BenchmarksSection({ jobs, fromJob }: { jobs: TrainingJob[]; fromJob: string }) {
  const list = useLoad((signal) => api<EvaluationList>('inference', '/evaluations', { signal }), []);
  const models = useLoad((signal) => listModels(signal), []);
  const [model, setModel] = useState<ModelChoice>({ source: 'adapter', jobId: fromJob, checkpoint: '', baseModel: '' });
  const [tasks, setTasks] = useState('');
  const [limit, setLimit] = useState<number | string>('');
  const [fewshot, setFewshot] = useState<number | string>('');
  const [chatTemplate, setChatTemplate] = useState(false);
  const [humaneval, setHumaneval] = useState(false);
  const [problems, setProblems] = useState<number | string>('');
  const [tokens, setTokens] = useState<number | string>(512);
  const [withBase, setWithBase] = useState(false);
  const [starting, setStarting] = useState(false);
  const [error, setError] = useState<string>();
  const [actionError, setActionError] = useState<string>();
  const [cancelling, setCancelling] = useState<string>();
  const [openedId, setOpenedId] = useState<string>();

  const listed = list.data?.evaluations ?? [];
  // Followed: those the list saw queued or running, and the one opened (for its log).
  const followed = [...new Set([...listed.filter((e) => ACTIVE.includes(e.status)).map((e) => e.id), ...(openedId ? [openedId] : [])])];
  const { news, error: streamError } = useEvaluationNews(followed);
  const evaluations = listed.flatMap((e) => {
    const latest = news[e.id];
    if (latest?.deleted) return [];
    // A status the list read as ended is newer than one of a stream that stopped before its end.
    return [latest?.final ?? (latest?.status && ACTIVE.includes(e.status) ? { ...e, status: latest.status } : e)];
  });
  const opened = evaluations.find((e) => e.id === openedId);
  const request = modelRequest(model, jobs);
  const ofJob = model.source !== 'base';

  const start = async (event: FormEvent) => {
    event.preventDefault();
    setStarting(true);
    setError(undefined);
    const names = tasks.split(',').map((t) => t.trim()).filter(Boolean);
    try {
      const created = await api<Evaluation>('inference', '/evaluations', {
        json: {
          ...request,
          benchmarks: {
            ...(names.length ? { tasks: names } : {}),
            limit: given(limit),
            num_fewshot: given(fewshot),
            apply_chat_template: chatTemplate,
            ...(humaneval ? { humaneval: { limit: given(problems), max_new_tokens: given(tokens) } } : {}),
          },
          ...(ofJob && withBase ? { with_base: true } : {}),
        },
      });
      setOpenedId(created.id);
      list.reload();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setStarting(false);
    }
  };

  const cancel = async (id: string) => {
    setCancelling(id);
    setActionError(undefined);
    try {
      await api<Evaluation>('inference', `/evaluations/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
      list.reload();
    } catch (err) {
      setActionError((err as Error).message);
    } finally {
      setCancelling(undefined);
    }
  };

  const remove = async (id: string) => {
    setActionError(undefined);
    try {
      await api('inference', `/evaluations/${encodeURIComponent(id)}`, { method: 'DELETE' });
      if (openedId === id) setOpenedId(undefined);
      list.reload();
    } catch (err) {
      setActionError((err as Error).message);
    }
  };

  return (
    <Stack>
      <div>
        <Title order={3}>Benchmarks</Title>
        <Text size="sm" c="dimmed">
          Standard benchmarks, run by a worker in the background: lm-evaluation-harness tasks by name, and HumanEval.
        </Text>
      </div>
      <Card withBorder padding="lg" component="form" onSubmit={(e) => void start(e)} aria-label="Benchmarks">
        <Stack>
          <ModelPicker legend="Model" value={model} onChange={setModel} jobs={jobs} bases={models.data?.bases ?? []} />
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <TextInput label="lm-eval tasks" description="comma-separated task or group names: arc_easy, hellaswag, …" value={tasks} onChange={(e) => setTasks(e.currentTarget.value)} />
            <NumberInput label="Limit" description="examples per task: a count, or a fraction below 1 (empty: all)" value={limit} min={0} onChange={setLimit} />
            <NumberInput label="Few-shot examples" description="per prompt (empty: each task’s own)" value={fewshot} min={0} max={64} allowDecimal={false} onChange={setFewshot} />
          </SimpleGrid>
          <Checkbox label="Apply the chat template" description="renders lm-eval’s prompts through the model’s chat template (for chat-tuned models)" checked={chatTemplate} onChange={(e) => setChatTemplate(e.currentTarget.checked)} />
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <Checkbox label="HumanEval" description="the model completes Python functions; their tests run in a sandbox" mt="xs" checked={humaneval} onChange={(e) => setHumaneval(e.currentTarget.checked)} />
            <NumberInput label="Problems" description="the first N of HumanEval’s 164 (empty: all)" value={problems} min={1} max={164} allowDecimal={false} disabled={!humaneval} onChange={setProblems} />
            <NumberInput label="Tokens per completion" description="at most" value={tokens} min={1} max={4096} allowDecimal={false} disabled={!humaneval} onChange={setTokens} />
          </SimpleGrid>
          <Checkbox label="With the base model" description="also runs the benchmarks on the job’s base model, for its figures beside the model’s" checked={withBase && ofJob} disabled={!ofJob} onChange={(e) => setWithBase(e.currentTarget.checked)} />
          <ErrorAlert message={error} title="The benchmarks cannot start" />
          <Group justify="flex-end">
            <Button type="submit" loading={starting} disabled={!request}>
              Start benchmarks
            </Button>
          </Group>
        </Stack>
      </Card>
      <ErrorAlert message={list.error ?? actionError ?? streamError} />
      {opened && <BenchmarkRun evaluation={opened} log={news[opened.id]?.log ?? []} jobs={jobs} />}
      <Card withBorder padding="lg">
        <Stack>
          <Title order={4}>Your benchmark runs</Title>
          {list.data && evaluations.length === 0 && <Text c="dimmed">None yet.</Text>}
          {evaluations.length > 0 && (
            <ScrollTable label="Your benchmark runs" minWidth={640} fz="sm" headers={['Created', 'Model', 'Benchmarks', 'Status', '']}>
              {evaluations.map((e) => (
                <Table.Tr key={e.id} data-id={e.id} bg={e.id === openedId ? 'var(--mantine-color-indigo-0)' : undefined}>
                  <Table.Td>{formatTime(e.created_at)}</Table.Td>
                  <Table.Td>
                    {modelLabel(e, jobs)}
                    {e.request.with_base && (
                      <Text span size="xs" c="dimmed">
                        {' '}
                        and its base
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{benchmarksOf(e)}</Table.Td>
                  <Table.Td>
                    <StatusBadge status={e.status} />
                  </Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap" justify="flex-end">
                      <Button size="xs" variant="light" onClick={() => setOpenedId(e.id)}>
                        Open
                      </Button>
                      {ACTIVE.includes(e.status) ? (
                        <Button size="xs" color="orange" variant="light" loading={cancelling === e.id} onClick={() => void cancel(e.id)}>
                          Cancel
                        </Button>
                      ) : (
                        <ConfirmButton size="xs" question="Delete this benchmark run with its results and log?" confirmLabel="Delete run" onConfirm={() => remove(e.id)}>
                          Delete
                        </ConfirmButton>
                      )}
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </ScrollTable>
          )}
          {list.data?.has_more && (
            <Text size="xs" c="dimmed">
              The newest {listed.length} are listed.
            </Text>
          )}
        </Stack>
      </Card>
    </Stack>
  );
}
