// The GRPO reward functions of a launch: add and remove rewards, pick each one's type, and fill in the fields that
// type documents (rewards.ts), with its weight in the summed reward. Reference fields offer the dataset's columns.
import { Autocomplete, Button, Fieldset, Group, NativeSelect, NumberInput, SimpleGrid, Stack, TagsInput, Text, Textarea, TextInput } from '@mantine/core';
import { CODE_INPUT } from '../../components/code-input.ts';
import { draftOf, REWARD_KINDS, rewardKind, type RewardDraft, type RewardFieldSchema } from './rewards.ts';

interface RewardFieldsProps {
  rewards: RewardDraft[];
  onChange: (rewards: RewardDraft[]) => void;
  /** The dataset's columns besides the prompt (what reference_field may name). */
  columns: string[];
}

export function RewardFields({ rewards, onChange, columns }: RewardFieldsProps) {
  const replace = (id: number, next: RewardDraft) => onChange(rewards.map((r) => (r.id === id ? next : r)));
  const used = new Set(rewards.map((r) => String(r.values.name ?? '')));
  const freshName = (base: string) => (used.has(base) ? `${base}_${rewards.length + 1}` : base);
  return (
    <Stack gap="sm" role="group" aria-label="Rewards">
      <Text size="sm" fw={500}>
        Rewards (GRPO)
      </Text>
      <Text size="xs" c="dimmed">
        Each completion is scored by every reward; the scores are summed with their weights.
      </Text>
      {rewards.map((reward, index) => (
        <Fieldset key={reward.id} legend={`Reward ${index + 1}`} variant="filled">
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing="sm" verticalSpacing="xs">
            <NativeSelect
              label="type"
              value={reward.type}
              data={REWARD_KINDS.map((k) => k.type)}
              onChange={(e) => replace(reward.id, draftOf(e.currentTarget.value, reward.values, reward.id))}
            />
            {Object.entries(rewardKind(reward.type).fields).map(([name, field]) => (
              <RewardField
                key={name}
                name={name}
                field={field}
                required={rewardKind(reward.type).required.includes(name)}
                value={reward.values[name]}
                columns={columns}
                labels={(reward.values.labels as string[] | undefined) ?? []}
                onChange={(value) => replace(reward.id, { ...reward, values: { ...reward.values, [name]: value } })}
              />
            ))}
          </SimpleGrid>
          <Group justify="flex-end" mt="xs">
            <Button variant="subtle" color="red" size="compact-sm" aria-label={`Remove reward ${index + 1}`} onClick={() => onChange(rewards.filter((r) => r.id !== reward.id))}>
              Remove
            </Button>
          </Group>
        </Fieldset>
      ))}
      <Group>
        <Button variant="light" size="compact-sm" onClick={() => onChange([...rewards, draftOf('string_check', { name: freshName('match'), reference_field: columns[0] })])}>
          Add a reward
        </Button>
      </Group>
    </Stack>
  );
}

interface RewardFieldProps {
  name: string;
  field: RewardFieldSchema;
  required: boolean;
  value: unknown;
  columns: string[];
  labels: string[];
  onChange: (value: unknown) => void;
}

const PLACEHOLDERS: Record<string, string> = {
  source: 'def grade(sample, item):\n    return float(sample["output_text"] == item["answer"])',
  graders: '{"exact": {"type": "string_check", "name": "exact", "reference_field": "answer", "operation": "eq"}}',
  input: '[{"role": "user", "content": "Score 0 to 1: {{sample.output_text}} (expected {{item.answer}})"}]',
  sampling_params: '{"temperature": 0}',
};

/** Fields written as JSON: objects, and lists of objects (a judge's messages). */
const isJson = (field: RewardFieldSchema) => field.type === 'object' || (field.type === 'array' && field.items?.type === 'object');

function RewardField({ name, field, required, value, columns, labels, onChange }: RewardFieldProps) {
  const common = { label: name, description: field.description, required };
  if (field.enum) {
    const options = required || field.default !== undefined ? [...field.enum] : ['', ...field.enum];
    return <NativeSelect {...common} value={String(value ?? '')} data={options.map((o) => ({ value: o, label: o || '—' }))} onChange={(e) => onChange(e.currentTarget.value)} />;
  }
  if (name === 'reference_field') return <Autocomplete {...common} data={columns} value={String(value ?? '')} onChange={onChange} />;
  if (name === 'prompt') return <Textarea {...common} autosize minRows={2} value={String(value ?? '')} onChange={(e) => onChange(e.currentTarget.value)} />;
  // A python grader's source, and JSON: a multi grader's graders (name → grader), a judge's messages and sampling.
  if (name === 'source' || isJson(field)) {
    const placeholder = PLACEHOLDERS[name] ?? '{}';
    return <Textarea {...common} autosize minRows={3} styles={CODE_INPUT} placeholder={placeholder} value={typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value, null, 2)} onChange={(e) => onChange(e.currentTarget.value)} />;
  }
  if (field.type === 'number') return <NumberInput {...common} placeholder="1" value={value as number | string | undefined ?? ''} onChange={onChange} />;
  if (field.prefixItems) {
    const [low, high] = (value as Array<number | string> | undefined) ?? ['', ''];
    return (
      <Group grow gap="xs" align="flex-end">
        <NumberInput {...common} label={`${name}: lowest`} value={low ?? ''} onChange={(v) => onChange([v, high])} />
        <NumberInput label={`${name}: highest`} required={required} value={high ?? ''} onChange={(v) => onChange([low, v])} />
      </Group>
    );
  }
  if (field.type === 'array') {
    // The labels that earn the reward are picked among the labels.
    return <TagsInput {...common} data={name === 'passing_labels' ? labels : []} value={(value as string[] | undefined) ?? []} onChange={onChange} />;
  }
  return <TextInput {...common} value={String(value ?? '')} onChange={(e) => onChange(e.currentTarget.value)} />;
}
