// Step 2: how the upload becomes ChatML — mode, mappings, whitespace, splits and augmentation — with the first
// records previewed as chat bubbles before anything is committed.
import { useMemo, useState, type FormEvent } from 'react';
import { Accordion, Button, Card, Group, NativeSelect, NumberInput, PasswordInput, SimpleGrid, Stack, Switch, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useLocation } from 'wouter';
import { api } from '../../api/client.ts';
import type { ProcessingMode, ProcessingResult, UploadResult } from '../../api/types.ts';
import { RecordBubbles } from '../../components/ChatBubbles.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { guessMappings, MODE_FIELDS, previewRecords, type MappingKey, type Mappings } from './preview.ts';
import { MappingInput } from './MappingInput.tsx';

const MODES: Array<{ value: ProcessingMode; label: string }> = [
  { value: 'language_modeling', label: 'Conversations (sft)' },
  { value: 'prompt_only', label: 'Prompts only (grpo)' },
  { value: 'preference', label: 'Preferences (dpo, orpo)' },
];

const FIELD_TEXT: Record<MappingKey, [string, string]> = {
  system_field: ['System prompt', 'Optional instruction before the conversation'],
  user_field: ['User message', 'What the model is asked'],
  assistant_field: ['Assistant answer', 'What the model should answer'],
  chosen_field: ['Chosen answer', 'The preferred answer'],
  rejected_field: ['Rejected answer', 'The answer to avoid'],
};

interface SplitForm {
  type: 'no_split' | 'manual_split';
  test_size: number | string;
  sample_size: number | string;
  split: string;
}

interface AugmentationForm {
  augmentation_factor: number | string;
  use_eda: boolean;
  use_back_translation: boolean;
  use_paraphrasing: boolean;
  use_synthesis: boolean;
  llm_api_key: string;
  synthesis_ratio: number | string;
  custom_prompt: string;
}

const NO_AUGMENTATION: AugmentationForm = {
  augmentation_factor: 1.5, use_eda: false, use_back_translation: false, use_paraphrasing: false, use_synthesis: false, llm_api_key: '', synthesis_ratio: '', custom_prompt: '',
};

const numberOrNull = (value: number | string) => (value === '' ? null : Number(value));

export function ProcessForm({ upload }: { upload: UploadResult }) {
  const [, navigate] = useLocation();
  const [name, setName] = useState(upload.filename.replace(/\.[^.]+$/, ''));
  const [mode, setMode] = useState<ProcessingMode>('language_modeling');
  const [mappings, setMappings] = useState<Mappings>(() => guessMappings(upload.columns));
  const [normalize, setNormalize] = useState(true);
  const [split, setSplit] = useState<SplitForm>({ type: 'manual_split', test_size: 0.1, sample_size: '', split: '' });
  const [augmentation, setAugmentation] = useState<AugmentationForm>(NO_AUGMENTATION);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const fields = MODE_FIELDS[mode];
  const preview = useMemo(() => previewRecords(mode, mappings, upload.sample, upload.columns, normalize), [mode, mappings, upload, normalize]);
  const augmenting = augmentation.use_eda || augmentation.use_back_translation || augmentation.use_paraphrasing || augmentation.use_synthesis;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const field_mappings = Object.fromEntries([...fields.required, ...fields.optional].filter((k) => mappings[k]?.value).map((k) => [k, mappings[k]]));
    const split_config =
      split.type === 'manual_split'
        ? { type: 'manual_split', test_size: numberOrNull(split.test_size), sample_size: numberOrNull(split.sample_size), split: split.split || null }
        : { type: 'no_split', sample_size: numberOrNull(split.sample_size), split: split.split || null };
    const augmentation_config = augmenting
      ? {
          ...augmentation,
          augmentation_factor: Number(augmentation.augmentation_factor),
          llm_api_key: augmentation.llm_api_key || null,
          synthesis_ratio: numberOrNull(augmentation.synthesis_ratio),
          custom_prompt: augmentation.custom_prompt || null,
        }
      : undefined;
    try {
      const result = await api<ProcessingResult>('preprocessing', '/datasets/process', {
        json: { dataset_name: name, dataset_id: upload.dataset_id, processing_mode: mode, config: { field_mappings, normalize_whitespace: normalize, split_config, augmentation_config } },
      });
      navigate(`/datasets/${result.processed_dataset_id}`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };

  return (
    <Card withBorder padding="lg" component="form" onSubmit={(e) => void submit(e)} aria-label="Processing">
      <Stack>
        <Title order={2} size="h4">
          2. Process into conversations
        </Title>
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label="Dataset name" value={name} onChange={(e) => setName(e.currentTarget.value)} required />
          <NativeSelect label="Processing mode" value={mode} data={MODES} onChange={(e) => setMode(e.currentTarget.value as ProcessingMode)} />
        </SimpleGrid>
        {[...fields.optional, ...fields.required]
          .sort((a, b) => MAPPING_ORDER.indexOf(a) - MAPPING_ORDER.indexOf(b))
          .map((key) => (
            <MappingInput
              key={key}
              label={FIELD_TEXT[key][0]}
              description={FIELD_TEXT[key][1]}
              required={fields.required.includes(key)}
              columns={upload.columns}
              value={mappings[key]}
              onChange={(value) => setMappings((m) => ({ ...m, [key]: value }))}
            />
          ))}
        <Switch label="Normalise whitespace (trim, collapse spaces, keep single newlines)" checked={normalize} onChange={(e) => setNormalize(e.currentTarget.checked)} />
        <SplitFields split={split} onChange={setSplit} />
        <Accordion variant="contained">
          <Accordion.Item value="augmentation">
            <Accordion.Control>Augmentation (train split only){augmenting ? ' — on' : ''}</Accordion.Control>
            <Accordion.Panel>
              <AugmentationFields value={augmentation} onChange={setAugmentation} />
            </Accordion.Panel>
          </Accordion.Item>
        </Accordion>
        <Stack gap="xs" aria-label="Preview" role="region">
          <Title order={3} size="h5">
            Preview of the first records
          </Title>
          {preview.problems.length > 0 ? (
            <ErrorAlert title="Not yet" message={preview.problems.join('; ')} />
          ) : (
            <SimpleGrid cols={{ base: 1, md: 2 }} data-testid="preview">
              {preview.records.slice(0, 4).map((record, i) => (
                <RecordBubbles key={i} record={record} />
              ))}
            </SimpleGrid>
          )}
        </Stack>
        <ErrorAlert message={error} title="Processing was refused" />
        <Group justify="flex-end">
          <Button type="submit" loading={busy} disabled={!name.trim()}>
            Process dataset
          </Button>
        </Group>
      </Stack>
    </Card>
  );
}

const MAPPING_ORDER: MappingKey[] = ['system_field', 'user_field', 'assistant_field', 'chosen_field', 'rejected_field'];

function SplitFields({ split, onChange }: { split: SplitForm; onChange: (split: SplitForm) => void }) {
  const set = (patch: Partial<SplitForm>) => onChange({ ...split, ...patch });
  return (
    <SimpleGrid cols={{ base: 1, sm: 2, md: 4 }}>
      <NativeSelect
        label="Splits"
        value={split.type}
        data={[
          { value: 'manual_split', label: 'train and test' },
          { value: 'no_split', label: 'train only' },
        ]}
        onChange={(e) => set({ type: e.currentTarget.value as SplitForm['type'] })}
      />
      {split.type === 'manual_split' && (
        <NumberInput label="Test size" description="fraction (0–1) or rows" value={split.test_size} min={0} step={0.05} onChange={(v) => set({ test_size: v })} />
      )}
      <NumberInput label="Sample size" description="rows to keep (empty: all)" value={split.sample_size} min={1} step={1} allowDecimal={false} onChange={(v) => set({ sample_size: v })} />
      <TextInput label="Source split" description="empty: the first" value={split.split} onChange={(e) => set({ split: e.currentTarget.value })} />
    </SimpleGrid>
  );
}

function AugmentationFields({ value, onChange }: { value: AugmentationForm; onChange: (value: AugmentationForm) => void }) {
  const set = (patch: Partial<AugmentationForm>) => onChange({ ...value, ...patch });
  return (
    <Stack gap="sm">
      <Text size="xs" c="dimmed">
        Back-translation, paraphrasing and synthesis call the language model at LLM_API_BASE with your key (never stored).
      </Text>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <Switch label="EDA (synonyms, insertion, swap, deletion)" checked={value.use_eda} onChange={(e) => set({ use_eda: e.currentTarget.checked })} />
        <Switch label="Back-translation" checked={value.use_back_translation} onChange={(e) => set({ use_back_translation: e.currentTarget.checked })} />
        <Switch label="Paraphrasing" checked={value.use_paraphrasing} onChange={(e) => set({ use_paraphrasing: e.currentTarget.checked })} />
        <Switch label="Synthesis" checked={value.use_synthesis} onChange={(e) => set({ use_synthesis: e.currentTarget.checked })} />
        <NumberInput label="Augmentation factor" description="train grows to about factor × rows" value={value.augmentation_factor} min={1} step={0.5} onChange={(v) => set({ augmentation_factor: v })} />
        <PasswordInput label="LLM API key" value={value.llm_api_key} onChange={(e) => set({ llm_api_key: e.currentTarget.value })} autoComplete="off" />
        <NumberInput label="Synthesis ratio" description="new conversations per row" value={value.synthesis_ratio} min={0} step={0.1} onChange={(v) => set({ synthesis_ratio: v })} />
      </SimpleGrid>
      <Textarea label="Synthesis prompt" value={value.custom_prompt} autosize minRows={2} onChange={(e) => set({ custom_prompt: e.currentTarget.value })} />
    </Stack>
  );
}
