// Launch a training job: dataset, base model, trainer, a preset, and every setting behind "Advanced"; the pre-flight
// report (a dry run of POST /train) is shown before the job is submitted.
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { Accordion, Anchor, Autocomplete, Button, Card, Group, NativeSelect, PasswordInput, SegmentedControl, SimpleGrid, Stack, Switch, Text, TextInput, Title } from '@mantine/core';
import { Link, useLocation, useSearch } from 'wouter';
import { api } from '../../api/client.ts';
import { listModels } from '../../api/models.ts';
import type { DatasetList, PreflightReport, ProcessedDataset } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { plural } from '../../components/format.ts';
import { PreflightView } from './PreflightView.tsx';
import { RewardFields } from './RewardFields.tsx';
import { initialRewards, rewardConfig, type RewardDraft } from './rewards.ts';
import { SchemaFields } from './SchemaFields.tsx';
import { cleanValues, defaultsOf, EVAL_CONFIG, EXPORT_CONFIG, fieldsFor, HYPERPARAMETERS, PRESETS, presetSettings, TRACKER_CONFIG, TRAINING_FIELDS, type PresetName } from './training-schema.ts';

/** The trainers a dataset of each processing_mode can run (the schema's `x-dataset-modes` of trainer_type). */
const TRAINERS_BY_MODE = Object.entries(TRAINING_FIELDS.trainer_type?.['x-dataset-modes'] ?? {}).reduce<Record<string, string[]>>(
  (byMode, [trainer, mode]) => ({ ...byMode, [mode]: [...(byMode[mode] ?? []), trainer] }),
  {},
);

export function LaunchPage() {
  const [, navigate] = useLocation();
  const search = new URLSearchParams(useSearch());
  const datasets = useLoad((signal) => api<DatasetList>('preprocessing', '/datasets', { signal }), []);
  const models = useLoad((signal) => listModels(signal), []);
  const workers = useLoad((signal) => api<{ workers: Array<{ devices: Array<{ kind: string }> }> }>('training', '/workers', { signal }), []);

  const [datasetId, setDatasetId] = useState(search.get('dataset') ?? '');
  const [jobName, setJobName] = useState('');
  const [baseModel, setBaseModel] = useState('');
  const [method, setMethod] = useState<string>();
  const [trainer, setTrainer] = useState('');
  const [preset, setPreset] = useState<PresetName>('quick');
  const [hyperparameters, setHyperparameters] = useState<Record<string, unknown>>(() => presetSettings('quick').hyperparameters);
  const [evalConfig, setEvalConfig] = useState(() => presetSettings('quick').evalConfig);
  const [exportConfig, setExportConfig] = useState(() => defaultsOf(EXPORT_CONFIG));
  const [trackerConfig, setTrackerConfig] = useState<Record<string, unknown>>({});
  const [rewards, setRewards] = useState<RewardDraft[]>(initialRewards);
  const [resume, setResume] = useState(false);
  const [fromJob, setFromJob] = useState('');
  const [hubToken, setHubToken] = useState('');
  const [report, setReport] = useState<PreflightReport>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState<'review' | 'start'>();

  const ready = useMemo(() => (datasets.data?.datasets ?? []).filter((d) => d.status === 'ready'), [datasets.data]);
  const dataset = ready.find((d) => d.processed_dataset_id === datasetId);
  const trainers = TRAINERS_BY_MODE[dataset?.processing_mode ?? 'language_modeling'] ?? ['sft'];
  const hasCuda = workers.data?.workers.some((w) => w.devices.some((d) => d.kind === 'cuda')) ?? false;
  const chosenMethod = method ?? (hasCuda ? 'QLoRA' : 'LoRA');
  const chosenTrainer = trainers.includes(trainer) ? trainer : trainers[0]!;
  const hyperparameterFields = useMemo(() => fieldsFor(HYPERPARAMETERS, chosenTrainer, chosenMethod), [chosenTrainer, chosenMethod]);
  // A prompt_only dataset keeps its source columns beside the prompt: what a reward may compare against.
  const details = useLoad(
    (signal) => (chosenTrainer === 'grpo' && datasetId ? api<ProcessedDataset>('preprocessing', `/datasets/${encodeURIComponent(datasetId)}`, { signal }) : Promise.resolve(undefined)),
    [chosenTrainer, datasetId],
  );
  const columns = useMemo(() => Object.keys(details.data?.splits[0]?.samples[0] ?? {}).filter((c) => c !== 'prompt'), [details.data]);

  useEffect(() => {
    if (!datasetId && ready[0]) setDatasetId(ready[0].processed_dataset_id);
  }, [ready, datasetId]);
  useEffect(() => {
    if (!baseModel && models.data?.bases[0]) setBaseModel(models.data.bases[0]);
  }, [models.data, baseModel]);
  // Whatever changes after a review makes the report stale: the next submit reviews again.
  useEffect(() => setReport(undefined), [datasetId, baseModel, chosenMethod, chosenTrainer, hyperparameters, evalConfig, exportConfig, trackerConfig, rewards, resume, fromJob]);

  const body = (dryRun: boolean) => {
    const trackerValues = cleanValues(TRACKER_CONFIG, trackerConfig);
    return {
      processed_dataset_id: datasetId,
      job_name: jobName.trim() || `${dataset?.dataset_name ?? 'job'} · ${baseModel}`,
      ...(hubToken ? { hub_token: hubToken } : {}),
      dry_run: dryRun,
      training_config: {
        base_model_id: baseModel,
        // A model the store holds is local; anything else is looked up on the hub.
        provider: models.data?.bases.includes(baseModel) ? 'local' : 'hub',
        method: chosenMethod,
        trainer_type: chosenTrainer,
        hyperparameters: cleanValues(hyperparameterFields, hyperparameters),
        eval_config: cleanValues(EVAL_CONFIG, evalConfig),
        export_config: cleanValues(EXPORT_CONFIG, exportConfig),
        ...(Object.keys(trackerValues).length > 0 ? { tracker_config: trackerValues } : {}),
        ...(chosenTrainer === 'grpo' ? { reward_config: rewardConfig(rewards) } : {}),
        resume_on_restart: resume,
        ...(fromJob ? { from_job: fromJob } : {}),
      },
    };
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    const dryRun = report === undefined;
    setBusy(dryRun ? 'review' : 'start');
    try {
      if (dryRun) {
        setReport((await api<{ preflight: PreflightReport }>('training', '/train', { json: body(true) })).preflight);
      } else {
        const { job_id } = await api<{ job_id: string }>('training', '/train', { json: body(false) });
        navigate(`/training/${job_id}`);
      }
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <Stack component="form" onSubmit={(e) => void submit(e)} aria-label="New training job">
      <Anchor component={Link} href="/training" size="sm">
        ← Training
      </Anchor>
      <Title order={2}>New training job</Title>
      <ErrorAlert message={datasets.error ?? models.error} title="Could not load the choices" />
      <Card withBorder padding="lg">
        <Stack>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <NativeSelect
              label="Dataset"
              required
              value={datasetId}
              data={[{ value: '', label: ready.length ? '— choose —' : 'no ready dataset yet' }, ...ready.map((d) => ({ value: d.processed_dataset_id, label: `${d.dataset_name} (${plural(d.num_examples, 'row')}, ${d.splits.join('+')})` }))]}
              onChange={(e) => setDatasetId(e.currentTarget.value)}
            />
            <TextInput label="Job name" placeholder={`${dataset?.dataset_name ?? 'job'} · ${baseModel}`} value={jobName} onChange={(e) => setJobName(e.currentTarget.value)} />
            <Autocomplete label="Base model" description="a model of the store, or a hub id (owner/name)" required value={baseModel} data={models.data?.bases ?? []} onChange={setBaseModel} />
            <SimpleGrid cols={2}>
              <NativeSelect label="Method" description={TRAINING_FIELDS.method?.description} value={chosenMethod} data={['LoRA', 'QLoRA', 'Full']} onChange={(e) => setMethod(e.currentTarget.value)} />
              <NativeSelect label="Trainer" description="fits the dataset's mode" value={chosenTrainer} data={trainers} onChange={(e) => setTrainer(e.currentTarget.value)} />
            </SimpleGrid>
          </SimpleGrid>
          <Stack gap={4}>
            <Text size="sm" fw={500} id="preset-label">
              Preset
            </Text>
            <SegmentedControl
              aria-labelledby="preset-label"
              value={preset}
              data={Object.entries(PRESETS).map(([value, p]) => ({ value, label: p.label }))}
              onChange={(value) => {
                const settings = presetSettings(value as PresetName);
                setPreset(value as PresetName);
                setHyperparameters(settings.hyperparameters);
                // the evaluation's schedule follows the preset; whether to evaluate stays the user's choice
                setEvalConfig((c) => ({ ...c, eval_steps: settings.evalConfig.eval_steps }));
              }}
            />
            <Text size="xs" c="dimmed">
              {PRESETS[preset].description}
            </Text>
          </Stack>
          {chosenTrainer === 'grpo' && <RewardFields rewards={rewards} onChange={setRewards} columns={columns} />}
          <Accordion variant="contained" multiple>
            <Accordion.Item value="hyperparameters">
              <Accordion.Control>Advanced: every hyperparameter {chosenTrainer} reads</Accordion.Control>
              <Accordion.Panel>
                <SchemaFields group="hyperparameters" schema={hyperparameterFields} values={hyperparameters} onChange={(k, v) => setHyperparameters((h) => ({ ...h, [k]: v }))} />
              </Accordion.Panel>
            </Accordion.Item>
            <Accordion.Item value="eval">
              <Accordion.Control>Advanced: evaluation during training</Accordion.Control>
              <Accordion.Panel>
                <SchemaFields group="eval_config" schema={EVAL_CONFIG} values={evalConfig} onChange={(k, v) => setEvalConfig((c) => ({ ...c, [k]: v }))} />
              </Accordion.Panel>
            </Accordion.Item>
            <Accordion.Item value="export">
              <Accordion.Control>Advanced: what the job writes when it ends</Accordion.Control>
              <Accordion.Panel>
                <SchemaFields group="export_config" schema={EXPORT_CONFIG} values={exportConfig} onChange={(k, v) => setExportConfig((c) => ({ ...c, [k]: v }))} />
              </Accordion.Panel>
            </Accordion.Item>
            <Accordion.Item value="more">
              <Accordion.Control>Advanced: tracker, continuation, credentials</Accordion.Control>
              <Accordion.Panel>
                <Stack>
                  <SchemaFields group="tracker_config" schema={TRACKER_CONFIG} values={trackerConfig} onChange={(k, v) => setTrackerConfig((c) => ({ ...c, [k]: v }))} />
                  <SimpleGrid cols={{ base: 1, sm: 2 }}>
                    <TextInput label="from_job" description={TRAINING_FIELDS.from_job?.description} value={fromJob} onChange={(e) => setFromJob(e.currentTarget.value)} />
                    <PasswordInput label="hub_token" description="model-hub credential for gated models; never stored" value={hubToken} onChange={(e) => setHubToken(e.currentTarget.value)} autoComplete="off" />
                  </SimpleGrid>
                  <Switch label="resume_on_restart" description={TRAINING_FIELDS.resume_on_restart?.description} checked={resume} onChange={(e) => setResume(e.currentTarget.checked)} />
                </Stack>
              </Accordion.Panel>
            </Accordion.Item>
          </Accordion>
        </Stack>
      </Card>
      {report && (
        <Card withBorder padding="lg" role="region" aria-label="Pre-flight report">
          <Title order={3} size="h4" mb="sm">
            Pre-flight report
          </Title>
          <PreflightView report={report} />
        </Card>
      )}
      <ErrorAlert message={error} title={report ? 'The job was refused' : 'The review was refused'} />
      {busy === 'review' && (
        <Text size="sm" c="dimmed" role="status">
          A worker renders and counts the data as training would. The first review of a model on a machine also times a
          few real training steps (half a minute or more, once); later ones take seconds.
        </Text>
      )}
      <Group justify="flex-end">
        {report && (
          <Button variant="default" onClick={() => setReport(undefined)}>
            Change settings
          </Button>
        )}
        <Button type="submit" loading={busy !== undefined} disabled={!datasetId || !baseModel}>
          {report ? 'Start training' : 'Review (pre-flight)'}
        </Button>
      </Group>
    </Stack>
  );
}
