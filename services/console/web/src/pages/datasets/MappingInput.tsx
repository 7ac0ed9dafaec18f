// One field mapping: a column, or a template with the columns offered as {column} buttons.
import { useRef } from 'react';
import { Button, Group, NativeSelect, SegmentedControl, Stack, Text, Textarea } from '@mantine/core';
import type { FieldMapping } from '../../api/types.ts';

interface MappingInputProps {
  label: string;
  description: string;
  required: boolean;
  columns: string[];
  value: FieldMapping | undefined;
  onChange: (value: FieldMapping | undefined) => void;
}

export function MappingInput({ label, description, required, columns, value, onChange }: MappingInputProps) {
  const type = value?.type ?? 'column';
  const template = useRef<HTMLTextAreaElement>(null);
  const insert = (column: string) => {
    const current = value?.type === 'template' ? value.value : '';
    const at = template.current?.selectionStart ?? current.length;
    onChange({ type: 'template', value: `${current.slice(0, at)}{${column}}${current.slice(at)}` });
    template.current?.focus();
  };
  const id = label.toLowerCase().replace(/\W+/g, '-');
  return (
    <Stack gap={6} role="group" aria-labelledby={`${id}-label`}>
      <Group justify="space-between" wrap="wrap" gap="xs">
        <div>
          <Text id={`${id}-label`} size="sm" fw={500}>
            {label}
            {required && <span aria-hidden> *</span>}
          </Text>
          <Text size="xs" c="dimmed">
            {description}
          </Text>
        </div>
        <SegmentedControl
          size="xs"
          value={type}
          aria-label={`${label}: column or template`}
          data={[
            { value: 'column', label: 'Column' },
            { value: 'template', label: 'Template' },
            { value: 'image', label: 'Image' },
          ]}
          onChange={(next) => onChange(next === 'template' ? { type: 'template', value: value?.value ? (value.type === 'column' ? `{${value.value}}` : value.value) : '' } : { type: next as 'column' | 'image', value: columns.includes(value?.value ?? '') ? value!.value : '' })}
        />
      </Group>
      {type === 'template' ? (
        <>
          <Textarea
            ref={template}
            aria-label={`${label} template`}
            placeholder="e.g. Question: {question}"
            autosize
            minRows={1}
            value={value?.value ?? ''}
            onChange={(e) => onChange({ type: 'template', value: e.currentTarget.value })}
          />
          <Group gap={4} aria-label={`Insert a column into the ${label} template`}>
            {columns.map((column) => (
              <Button key={column} size="compact-xs" variant="light" onClick={() => insert(column)}>
                {`{${column}}`}
              </Button>
            ))}
          </Group>
        </>
      ) : (
        <NativeSelect
          aria-label={`${label} column`}
          value={value?.value ?? ''}
          data={[{ value: '', label: required ? '— choose a column —' : '— none —' }, ...columns.map((c) => ({ value: c, label: c }))]}
          onChange={(e) => onChange(e.currentTarget.value ? { type, value: e.currentTarget.value } : undefined)}
        />
      )}
    </Stack>
  );
}
