// The first records as processing will write them, computed here from the upload's sample rows and the form, so
// the preview follows every keystroke without a request. Templates and whitespace go through the very functions the
// preprocessing service uses (pure modules of packages/datasets, bundled into the page); the service still checks
// everything again when the form is submitted.
import { normalizeWhitespace } from '../../../../../../packages/datasets/src/processing/normalize.ts';
import { parseTemplate, renderTemplate, templateColumns, TemplateSyntaxError, type TemplatePiece } from '../../../../../../packages/datasets/src/processing/templates.ts';
import type { ChatMessage, FieldMapping, ProcessingMode } from '../../api/types.ts';

export const MAPPING_KEYS = ['system_field', 'user_field', 'assistant_field', 'chosen_field', 'rejected_field'] as const;
export type MappingKey = (typeof MAPPING_KEYS)[number];

/** The mapping keys each mode needs (the service's REQUIRED_FIELD_MAPPINGS) and the optional ones it uses. */
export const MODE_FIELDS: Record<ProcessingMode, { required: MappingKey[]; optional: MappingKey[] }> = {
  language_modeling: { required: ['user_field', 'assistant_field'], optional: ['system_field'] },
  prompt_only: { required: ['user_field'], optional: ['system_field'] },
  preference: { required: ['user_field', 'chosen_field', 'rejected_field'], optional: ['system_field'] },
};

export type Mappings = Partial<Record<MappingKey, FieldMapping>>;

export interface Preview {
  records: Array<Record<string, unknown>>;
  /** What the service would refuse, in its words; the preview is empty while there is any. */
  problems: string[];
}

export function previewRecords(mode: ProcessingMode, mappings: Mappings, rows: Array<Record<string, unknown>>, columns: string[], normalize: boolean): Preview {
  const problems: string[] = [];
  const compiled = new Map<MappingKey, TemplatePiece[] | { image: string }>();
  for (const key of MODE_FIELDS[mode].required) {
    if (!mappings[key]?.value) problems.push(`${key} is required for processing_mode ${mode}`);
  }
  for (const key of [...MODE_FIELDS[mode].required, ...MODE_FIELDS[mode].optional]) {
    const mapping = mappings[key];
    if (!mapping?.value) continue;
    if (mapping.type === 'image') {
      if (key !== 'user_field') problems.push(`${key} cannot be an image; images belong to user_field`);
      compiled.set(key, { image: mapping.value });
      continue;
    }
    let pieces: TemplatePiece[];
    try {
      pieces = mapping.type === 'template' ? parseTemplate(mapping.value) : [{ column: mapping.value }];
    } catch (err) {
      if (!(err instanceof TemplateSyntaxError)) throw err;
      problems.push(`${key}: template ${JSON.stringify(mapping.value)}: ${err.message}`);
      continue;
    }
    for (const column of templateColumns(pieces)) {
      if (!columns.includes(column)) problems.push(`${key}: column ${JSON.stringify(column)} does not exist; the dataset's columns are: ${columns.join(', ')}`);
    }
    compiled.set(key, pieces);
  }
  if (problems.length > 0) return { records: [], problems };
  if (mode === 'language_modeling' && JSON.stringify(compiled.get('user_field')) === JSON.stringify(compiled.get('assistant_field'))) {
    return { records: [], problems: ['user_field and assistant_field are the same mapping, so the model would only learn to repeat the prompt; map assistant_field to the answers'] };
  }

  const text = (s: string) => (normalize ? normalizeWhitespace(s) : s);
  const content = (key: MappingKey, row: Record<string, unknown>): ChatMessage['content'] => {
    const part = compiled.get(key)!;
    return 'image' in part ? [{ type: 'image', image: `column ${part.image}` }] : text(renderTemplate(part, row));
  };
  const records = rows.map((row) => {
    const prompt: ChatMessage[] = [];
    if (compiled.has('system_field')) prompt.push({ role: 'system', content: content('system_field', row) });
    prompt.push({ role: 'user', content: content('user_field', row) });
    const answer = (key: MappingKey): ChatMessage[] => [{ role: 'assistant', content: content(key, row) }];
    switch (mode) {
      case 'language_modeling':
        return { messages: [...prompt, ...answer('assistant_field')] };
      case 'prompt_only':
        return { ...row, prompt };
      case 'preference':
        return { prompt, chosen: answer('chosen_field'), rejected: answer('rejected_field') };
    }
  });
  return { records, problems };
}

/** A first guess of the mappings from the column names (question/answer, prompt/response, chosen/rejected, …). A column
 *  is guessed for one field at most: one column named "question;answer" (a file split at the wrong delimiter) must
 *  not become both the user and the assistant turn. */
export function guessMappings(columns: string[]): Mappings {
  const taken = new Set<string>();
  const guess: Mappings = {};
  const pick = (key: MappingKey, pattern: RegExp) => {
    const column = columns.find((c) => !taken.has(c) && pattern.test(c));
    if (!column) return;
    taken.add(column);
    guess[key] = { type: 'column', value: column };
  };
  pick('system_field', /^(system|system_prompt)$/i);
  pick('user_field', /question|prompt|instruction|input|query|user/i);
  pick('assistant_field', /answer|response|output|completion|assistant|target/i);
  pick('chosen_field', /chosen|preferred|accepted/i);
  pick('rejected_field', /rejected|dispreferred/i);
  return guess;
}
