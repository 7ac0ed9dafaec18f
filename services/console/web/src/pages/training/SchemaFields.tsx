// Inputs for every field of an object the API documents (see training-schema.ts): a select for an enum, a switch for
// a boolean, a number field (whole numbers) or a text field read as a number (1e-4 allowed), else text.
import { NativeSelect, NumberInput, PasswordInput, SimpleGrid, Switch, TextInput } from '@mantine/core';
import type { FieldSchema, ObjectSchema } from './training-schema.ts';

interface SchemaFieldsProps {
  schema: ObjectSchema;
  values: Record<string, unknown>;
  onChange: (name: string, value: unknown) => void;
  /** A prefix for input names (the test and a reader tell eval_config.eval_steps from hyperparameters.*). */
  group: string;
}

export function SchemaFields({ schema, values, onChange, group }: SchemaFieldsProps) {
  return (
    <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing="sm" verticalSpacing="xs">
      {Object.entries(schema).map(([name, field]) => (
        <Field key={name} name={name} group={group} field={field} value={values[name]} onChange={(value) => onChange(name, value)} />
      ))}
    </SimpleGrid>
  );
}

function limits(field: FieldSchema): string {
  const parts: string[] = [];
  if (field.minimum !== undefined) parts.push(`≥ ${field.minimum}`);
  if (field.exclusiveMinimum !== undefined) parts.push(`> ${field.exclusiveMinimum}`);
  if (field.maximum !== undefined && field.maximum < 1e15) parts.push(`≤ ${field.maximum}`);
  if (field.exclusiveMaximum !== undefined) parts.push(`< ${field.exclusiveMaximum}`);
  return parts.join(', ');
}

function Field({ name, group, field, value, onChange }: { name: string; group: string; field: FieldSchema; value: unknown; onChange: (value: unknown) => void }) {
  const description = [field.description, limits(field), field.default !== undefined ? `default ${String(field.default)}` : ''].filter(Boolean).join(' · ');
  const common = { label: name, description, name: `${group}.${name}` };
  if (field.enum) {
    const options = field.default === undefined ? ['', ...field.enum] : [...field.enum];
    return <NativeSelect {...common} value={String(value ?? '')} data={options.map((o) => ({ value: o, label: o || '—' }))} onChange={(e) => onChange(e.currentTarget.value)} />;
  }
  if (field.type === 'boolean') {
    return <Switch {...common} mt="md" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />;
  }
  if (field.type === 'integer') {
    return <NumberInput {...common} value={value as number | string | undefined ?? ''} allowDecimal={false} min={field.minimum} onChange={(v) => onChange(v)} />;
  }
  if (field.type === 'number') {
    const text = value === undefined || value === null ? '' : String(value);
    return <TextInput {...common} inputMode="decimal" value={text} error={text !== '' && !Number.isFinite(Number(text)) ? 'not a number' : undefined} onChange={(e) => onChange(e.currentTarget.value)} />;
  }
  if (/key|token/.test(name)) return <PasswordInput {...common} value={String(value ?? '')} autoComplete="off" onChange={(e) => onChange(e.currentTarget.value)} />;
  return <TextInput {...common} value={String(value ?? '')} onChange={(e) => onChange(e.currentTarget.value)} />;
}
