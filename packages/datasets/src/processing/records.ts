// Turns source rows into ChatML records (decisions.md, "Processed record shapes"). The field mappings
// are checked against the dataset's columns and compiled once; building a record is then cheap.
import { UnprocessableEntity, type ValidationIssue } from '@ftp/platform';
import type { FieldMapping, FieldMappings, ProcessingMode } from '@ftp/schema';
import { normalizeWhitespace } from './normalize.ts';
import { parseTemplate, renderTemplate, TemplateSyntaxError, templateColumns, type TemplatePiece } from './templates.ts';
import { readTools } from './tool-calls.ts';

export type ContentPart = { type: 'text'; text: string } | { type: 'image'; image: string };
export type MessageContent = string | ContentPart[];
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: MessageContent;
}
export type ProcessedRecord = Record<string, unknown>;

/** Stores one image cell and returns its blob URI; throws a 422 when the cell is not an image. */
export type ImageResolver = (value: unknown, rowNumber: number, column: string, loc: string[]) => Promise<string>;

type CompiledPart =
  | { kind: 'text'; pieces: TemplatePiece[] }
  | { kind: 'image'; column: string; loc: string[] };

const MAPPING_KEYS = ['system_field', 'user_field', 'assistant_field', 'chosen_field', 'rejected_field'] as const;
type MappingKey = (typeof MAPPING_KEYS)[number];

const MAPPINGS_LOC = ['body', 'config', 'field_mappings'];

function compileMapping(mapping: FieldMapping, loc: string[], columns: Set<string>, issues: ValidationIssue[]): CompiledPart | undefined {
  const listing = [...columns].join(', ');
  let pieces: TemplatePiece[];
  if (mapping.type === 'template') {
    try {
      pieces = parseTemplate(mapping.value);
    } catch (err) {
      if (!(err instanceof TemplateSyntaxError)) throw err;
      issues.push({ loc: [...loc, 'value'], msg: `template ${JSON.stringify(mapping.value)}: ${err.message}`, type: 'template_syntax' });
      return undefined;
    }
  } else {
    pieces = [{ column: mapping.value }];
  }
  const unknown = templateColumns(pieces).filter((c) => !columns.has(c));
  for (const column of unknown) {
    issues.push({
      loc: [...loc, 'value'],
      msg: `column ${JSON.stringify(column)} does not exist; the dataset's columns are: ${listing}`,
      type: 'unknown_column',
    });
  }
  if (unknown.length > 0) return undefined;
  return mapping.type === 'image' ? { kind: 'image', column: mapping.value, loc } : { kind: 'text', pieces };
}

/** The refusal of a mapping whose user and assistant turns say the same thing: trained on it, a model learns only to
 *  repeat the prompt. Both fields are named; one column that holds both sides usually means a misread delimiter. */
export function echoedTurnIssues(columns: readonly string[]): ValidationIssue[] {
  const oneColumn = columns.length === 1 ? '; the file was read as one column: if it is separated by ";", "|" or tabs, upload it again with the delimiter field set' : '';
  return [
    {
      loc: [...MAPPINGS_LOC, 'user_field'],
      msg:
        'user_field and assistant_field render the same text in every row, so the model would only learn to repeat the prompt; ' +
        `map user_field to the prompts and assistant_field to the answers (the dataset's columns are: ${columns.join(', ')})${oneColumn}`,
      type: 'value_error',
    },
    {
      loc: [...MAPPINGS_LOC, 'assistant_field'],
      msg: 'assistant_field renders the same text as user_field in every row; map it to the column (or template) that holds the answers',
      type: 'value_error',
    },
  ];
}

/** A language_modeling record whose assistant message says what its user message says. */
export function echoesUser(record: ProcessedRecord): boolean {
  const messages = record.messages as ChatMessage[] | undefined;
  if (!Array.isArray(messages)) return false;
  const user = messages.find((m) => m.role === 'user');
  const assistant = messages.at(-1);
  if (!user || assistant?.role !== 'assistant') return false;
  return typeof user.content === 'string' ? user.content === assistant.content : JSON.stringify(user.content) === JSON.stringify(assistant.content);
}

export interface RecordBuilder {
  modality: 'text' | 'vision';
  /** The columns whose text fills the user and assistant (chosen, rejected) messages and nothing else: what text
   *  augmentation may change. A column the system prompt also uses is not one of them; nor is an image column. */
  augmentableColumns: string[];
  /** Those of augmentableColumns that fill the user message (the prompt) only: what paraphrasing and back-translation
   *  rewrite, the answers kept as they are. */
  userColumns: string[];
  /** Builds the record of a source row (1-based `rowNumber` for error messages). */
  build(row: Record<string, unknown>, rowNumber: number): ProcessedRecord | Promise<ProcessedRecord>;
}

export function compileRecordBuilder(options: {
  mode: ProcessingMode;
  mappings: FieldMappings;
  columns: string[];
  normalize: boolean;
  resolveImage: ImageResolver;
}): RecordBuilder {
  const { mode, mappings, normalize, resolveImage } = options;
  const columns = new Set(options.columns);
  const issues: ValidationIssue[] = [];
  const compiled = new Map<MappingKey, CompiledPart[]>();
  for (const key of MAPPING_KEYS) {
    const mapping = mappings[key];
    if (mapping === undefined) continue;
    const list = Array.isArray(mapping) ? mapping : [mapping];
    const parts = list.map((m, i) =>
      compileMapping(m, Array.isArray(mapping) ? [...MAPPINGS_LOC, key, String(i)] : [...MAPPINGS_LOC, key], columns, issues),
    );
    const images = parts.filter((p) => p?.kind === 'image');
    if (key !== 'user_field' && images.length > 0) {
      issues.push({ loc: [...MAPPINGS_LOC, key], msg: `${key} cannot be an image; images belong to user_field`, type: 'value_error' });
    }
    compiled.set(key, parts.filter((p): p is CompiledPart => p !== undefined));
  }
  const toolsColumn = compileToolsField(mappings.tools_field, mode, columns, issues);
  // The same mapping on both sides needs no row to tell (the console once guessed one column for both).
  const user = compiled.get('user_field');
  if (mode === 'language_modeling' && issues.length === 0 && user && JSON.stringify(user) === JSON.stringify(compiled.get('assistant_field'))) {
    issues.push(...echoedTurnIssues(options.columns));
  }
  if (issues.length > 0) throw new UnprocessableEntity(issues);

  const text = (s: string): string => (normalize ? normalizeWhitespace(s) : s);
  const hasImages = [...compiled.values()].some((parts) => parts.some((p) => p.kind === 'image'));
  const imageColumns = new Set([...compiled.values()].flat().flatMap((p) => (p.kind === 'image' ? [p.column] : [])));
  const userIsList = Array.isArray(mappings.user_field);

  const contentOf = (key: MappingKey, row: Record<string, unknown>, images: Map<CompiledPart, string>): MessageContent | undefined => {
    const parts = compiled.get(key);
    if (!parts) return undefined;
    if (!userIsList && parts.length === 1 && parts[0]!.kind === 'text' && !hasImages) {
      return text(renderTemplate(parts[0]!.pieces, row));
    }
    return parts.map((p): ContentPart =>
      p.kind === 'image' ? { type: 'image', image: images.get(p)! } : { type: 'text', text: text(renderTemplate(p.pieces, row)) },
    );
  };

  const assemble = (row: Record<string, unknown>, rowNumber: number, images: Map<CompiledPart, string>): ProcessedRecord => {
    const prompt: ChatMessage[] = [];
    const system = contentOf('system_field', row, images);
    if (system !== undefined) prompt.push({ role: 'system', content: system });
    prompt.push({ role: 'user', content: contentOf('user_field', row, images)! });
    const answer = (key: MappingKey): ChatMessage[] => [{ role: 'assistant', content: contentOf(key, row, images)! }];
    switch (mode) {
      case 'language_modeling': {
        const messages = [...prompt, ...answer('assistant_field')];
        return toolsColumn === undefined ? { messages } : { messages, tools: toolsOf(row, toolsColumn, rowNumber) };
      }
      case 'prompt_only':
        // Every source column is kept so GRPO rewards can reference it (reward_config.reference_field).
        return { ...copyColumns(row, options.columns), prompt };
      case 'preference':
        return { prompt, chosen: answer('chosen_field'), rejected: answer('rejected_field') };
    }
  };

  const textColumnsOf = (keys: readonly MappingKey[]) =>
    new Set(keys.flatMap((key) => (compiled.get(key) ?? []).flatMap((p) => (p.kind === 'text' ? templateColumns(p.pieces) : [p.column]))));
  const systemColumns = textColumnsOf(['system_field']);
  const augmentableColumns = [...textColumnsOf(['user_field', 'assistant_field', 'chosen_field', 'rejected_field'])].filter(
    (column) => !systemColumns.has(column) && !imageColumns.has(column),
  );
  const answerColumns = textColumnsOf(['assistant_field', 'chosen_field', 'rejected_field']);
  const userColumns = [...textColumnsOf(['user_field'])].filter((column) => augmentableColumns.includes(column) && !answerColumns.has(column));

  if (!hasImages) {
    const none = new Map<CompiledPart, string>();
    return { modality: 'text', augmentableColumns, userColumns, build: (row, rowNumber) => assemble(row, rowNumber, none) };
  }
  const imageParts = [...compiled.values()].flat().filter((p): p is Extract<CompiledPart, { kind: 'image' }> => p.kind === 'image');
  return {
    modality: 'vision',
    augmentableColumns,
    userColumns,
    async build(row, rowNumber) {
      const images = new Map<CompiledPart, string>();
      for (const part of imageParts) images.set(part, await resolveImage(row[part.column], rowNumber, part.column, part.loc));
      return assemble(row, rowNumber, images);
    },
  };
}

function copyColumns(row: Record<string, unknown>, columns: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of columns) if (c !== 'prompt') out[c] = row[c] ?? null;
  return out;
}


const TOOLS_LOC = [...MAPPINGS_LOC, 'tools_field'];

/** tools_field: a column (of a language_modeling dataset) whose cells hold a JSON array of tools. */
function compileToolsField(mapping: FieldMapping | undefined, mode: ProcessingMode, columns: Set<string>, issues: ValidationIssue[]): string | undefined {
  if (mapping === undefined) return undefined;
  if (mode !== 'language_modeling') {
    issues.push({ loc: TOOLS_LOC, msg: `tools_field applies to processing_mode language_modeling (tool conversations train with sft), not ${mode}; remove it`, type: 'value_error' });
  } else if (mapping.type !== 'column') {
    issues.push({ loc: [...TOOLS_LOC, 'type'], msg: 'tools_field must be of type column: a column holding a JSON array of tools', type: 'value_error' });
  } else if (!columns.has(mapping.value)) {
    issues.push({ loc: [...TOOLS_LOC, 'value'], msg: `column ${JSON.stringify(mapping.value)} does not exist; the dataset's columns are: ${[...columns].join(', ')}`, type: 'unknown_column' });
  } else {
    return mapping.value;
  }
  return undefined;
}

function toolsOf(row: Record<string, unknown>, column: string, rowNumber: number): unknown[] {
  try {
    return readTools(row[column], `column ${JSON.stringify(column)}`);
  } catch (err) {
    throw new UnprocessableEntity([{ loc: TOOLS_LOC, msg: `row ${rowNumber}: ${(err as Error).message}`, type: 'value_error' }]);
  }
}
