// Graders: OpenAI's grader objects (the pinned openai SDK's types), which a reinforcement job, the /v1 graders endpoints
// and POST /evaluation take, and what a grader says of itself that a JSON Schema cannot check, checked where the request
// is read (those, and native reward_config): its templates name only variables of the item and the sample, and a multi
// grader's formula is arithmetic over its graders' names. The core checks the same (core/src/ftcore/evaluation/graders.py) and
// grades.

import { z } from 'zod';

const nullable = <T extends z.ZodType>(schema: T) => schema.nullable();

/** text_similarity's metrics (cosine: sentence embeddings of the packaged all-MiniLM-L6-v2). */
export const SIMILARITY_METRICS = ['bleu', 'gleu', 'meteor', 'rouge_1', 'rouge_2', 'rouge_3', 'rouge_4', 'rouge_5', 'rouge_l', 'fuzzy_match', 'cosine'] as const;

const TEMPLATE = /\{\{\s*(.*?)\s*\}\}/g;
const VARIABLE = /^(item|sample)((?:\.[A-Za-z_][\w-]*)+)$/;
const SAMPLE_FIELDS = ['output_text', 'output_json'];
/** The graders a judge model answers. */
export const JUDGE_GRADERS: readonly string[] = ['score_model', 'label_model'];

export interface GraderProblem {
  /** Path below the grader. */
  path: Array<string | number>;
  message: string;
  /** The 422 entry's type when not `custom`. */
  type?: 'missing';
}

/** Why a template cannot be rendered: a {{…}} that is no variable of item or sample. */
export function templateProblem(text: string): string | undefined {
  for (const [whole, inner] of text.matchAll(TEMPLATE)) {
    const found = VARIABLE.exec(inner!);
    if (!found || (found[1] === 'sample' && !SAMPLE_FIELDS.includes(found[2]!.slice(1).split('.')[0]!))) {
      return `${whole} is not a variable; use {{item.<field>}}, {{sample.output_text}} or {{sample.output_json.<field>}}`;
    }
  }
  return undefined;
}

/** The item fields a template reads (the first name of each {{item.<field>…}}). */
export function templateItemFields(text: string): string[] {
  return [...text.matchAll(TEMPLATE)].flatMap(([, inner]) => {
    const found = VARIABLE.exec(inner!);
    return found && found[1] === 'item' ? [found[2]!.slice(1).split('.')[0]!] : [];
  });
}

/** Why a multi grader's calculate_output is no formula over `names`: numbers, the names, + - * /, parentheses, and
 *  min, max, abs of one or more arguments. */
export function formulaProblem(text: string, names: readonly string[]): string | undefined {
  const tokens = text.match(/\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|[A-Za-z_]\w*|\S/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const fail = (why: string): never => {
    throw new Error(why);
  };
  const expect = (token: string) => (tokens[at] === token ? at++ : fail(`expected ${token} at ${peek() === undefined ? 'the end' : JSON.stringify(peek())}`));
  const primary = (): void => {
    const token = tokens[at++];
    if (token === undefined) fail('the formula ends too soon');
    if (/^(\d|\.\d)/.test(token!)) return;
    if (token === '(') {
      expression();
      expect(')');
      return;
    }
    if (/^[A-Za-z_]/.test(token!)) {
      if (['min', 'max', 'abs'].includes(token!) && peek() === '(') {
        at++;
        expression();
        while (peek() === ',') {
          at++;
          expression();
        }
        expect(')');
        return;
      }
      if (!names.includes(token!)) fail(`${JSON.stringify(token)} names no grader; graders: ${names.join(', ')}`);
      return;
    }
    fail(`${JSON.stringify(token)} is not allowed; a formula has numbers, grader names, + - * /, parentheses, min, max and abs`);
  };
  const unary = (): void => {
    while (peek() === '-' || peek() === '+') at++;
    primary();
  };
  const term = (): void => {
    unary();
    while (peek() === '*' || peek() === '/') {
      at++;
      if (peek() === '*') fail('** is not allowed; a formula has + - * /, parentheses, min, max and abs');
      unary();
    }
  };
  const expression = (): void => {
    term();
    while (peek() === '+' || peek() === '-') {
      at++;
      term();
    }
  };
  try {
    if (tokens.length === 0) fail('the formula is empty');
    expression();
    if (at < tokens.length) fail(`${JSON.stringify(tokens[at])} is not allowed here`);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

export type GraderLike = { type: string; reference_field?: string; reference?: unknown; input?: unknown; graders?: Record<string, GraderLike>; calculate_output?: string };

/** Every problem of a grader (or reward_config item), nested graders included. */
export function graderProblems(grader: GraderLike): GraderProblem[] {
  const problems: GraderProblem[] = [];
  if (grader.type === 'string_check' || grader.type === 'text_similarity') {
    if (grader.reference_field === undefined && grader.reference === undefined) {
      problems.push({ path: ['reference_field'], message: `${grader.type} needs reference_field (a dataset column) or reference (a template such as {{item.answer}})`, type: 'missing' });
    }
    for (const key of ['input', 'reference'] as const) {
      const text = grader[key];
      const problem = typeof text === 'string' ? templateProblem(text) : undefined;
      if (problem) problems.push({ path: [key], message: problem });
    }
  }
  if (JUDGE_GRADERS.includes(grader.type)) {
    if (grader.input === undefined && (grader as { prompt?: unknown }).prompt === undefined) {
      problems.push({ path: ['input'], message: `a ${grader.type} grader needs input (the judge’s messages) or prompt`, type: 'missing' });
    }
    judgeTexts(grader).forEach((text, i) => {
      const problem = templateProblem(text);
      if (problem) problems.push({ path: ['input', i, 'content'], message: problem });
    });
    const range = (grader as { range?: unknown }).range;
    if (Array.isArray(range) && !(Number(range[0]) < Number(range[1]))) problems.push({ path: ['range'], message: 'range is [lowest, highest]: lowest below highest' });
  }
  if (grader.type === 'multi' && grader.graders) {
    for (const [name, sub] of Object.entries(grader.graders)) problems.push(...graderProblems(sub).map((p) => ({ ...p, path: ['graders', name, ...p.path] })));
    const problem = formulaProblem(grader.calculate_output ?? '', Object.keys(grader.graders));
    if (problem) problems.push({ path: ['calculate_output'], message: problem });
  }
  return problems;
}

/** The text of a judge's messages (a score_model or label_model grader's input; its prompt, natively). */
function judgeTexts(grader: GraderLike): string[] {
  if (!JUDGE_GRADERS.includes(grader.type)) return [];
  const messages = Array.isArray(grader.input) ? (grader.input as Array<{ content?: unknown }>) : [];
  const texts = messages.map((m) => (typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? m.content.map((p: { text?: unknown }) => String(p?.text ?? '')).join('') : ''));
  const prompt = (grader as { prompt?: unknown }).prompt;
  return typeof prompt === 'string' ? [...texts, prompt] : texts;
}

/** The item fields a grader reads through its templates and reference_field, nested graders included. */
export function graderItemFields(grader: GraderLike): string[] {
  const own = [grader.reference_field, grader.reference, grader.input].flatMap((text, i) =>
    typeof text !== 'string' ? [] : i === 0 ? [text] : templateItemFields(text),
  );
  own.push(...judgeTexts(grader).flatMap(templateItemFields));
  return [...new Set([...own, ...Object.values(grader.graders ?? {}).flatMap(graderItemFields)])];
}

// OpenAI's graders (the pinned openai SDK's types: string_check, text_similarity, python, score_model, multi), graded
// by the core (core/src/ftcore/evaluation/graders.py) as a GRPO reward. Templates: {{item.<field>}} (the training line's fields),
// {{sample.output_text}}, {{sample.output_json.<field>}}.
const graderName = z.string().min(1).max(64).describe('The grader’s name');
const graderTemplate = z.string().max(10_000);
const StringCheckGrader = z.object({
  type: z.literal('string_check'),
  name: graderName,
  input: graderTemplate.describe('What is graded, e.g. {{sample.output_text}}'),
  reference: graderTemplate.describe('What it is compared with, e.g. {{item.answer}}'),
  operation: z.enum(['eq', 'ne', 'like', 'ilike']),
});
const TextSimilarityGrader = z.object({
  type: z.literal('text_similarity'),
  name: graderName,
  input: graderTemplate,
  reference: graderTemplate,
  evaluation_metric: z.enum(SIMILARITY_METRICS).describe('cosine: sentence embeddings of the packaged all-MiniLM-L6-v2'),
});
const PythonGrader = z.object({
  type: z.literal('python'),
  name: graderName,
  source: z.string().min(1).max(100_000).describe('Defines grade(sample, item) -> float; runs sandboxed (no network, files or environment; CPU time and memory limits)'),
  image_tag: nullable(z.string().max(256)).optional().describe('Ignored: the sandbox has the worker’s Python'),
});
/** A judge's messages: OpenAI's score_model input, templates in their content. */
export const JudgeMessages = z
    .array(
      z.strictObject({
        role: z.enum(['user', 'assistant', 'system', 'developer']),
        content: z.union([z.string().max(100_000), z.array(z.strictObject({ type: z.string().max(64), text: z.string().max(100_000).optional() })).max(64)]),
        type: z.literal('message').optional(),
      }),
    )
    .min(1)
    .max(64)
    .describe('The judge’s messages, templates in their text');
/** A judge's sampling: temperature, top_p, seed, and max_completions_tokens (its answer's length). */
export const JudgeSampling = z.record(z.string().max(256), z.unknown());
const ScoreModelGrader = z.object({
  type: z.literal('score_model'),
  name: graderName,
  model: z.string().min(1).max(256).describe('The judge: one of this stack’s models (a base model, your fine-tuned model or checkpoint), run with your rights; or, with LLM_API_BASE set, a model asked there'),
  input: JudgeMessages,
  range: z.array(z.number()).length(2).optional().describe('Lowest and highest score (default [0, 1]); a judge’s score outside it is an error'),
  sampling_params: nullable(JudgeSampling).optional(),
});
const SubGrader = z.discriminatedUnion('type', [StringCheckGrader, TextSimilarityGrader, PythonGrader, ScoreModelGrader]);
const MultiGrader = z.object({
  type: z.literal('multi'),
  name: graderName,
  graders: z
    .union([
      z
        .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a grader name is a formula variable: letters, digits and _').max(64), SubGrader)
        .refine((graders) => Object.keys(graders).length > 0, 'name at least one grader')
        .meta({ minProperties: 1 }),
      SubGrader,
    ])
    .describe('The graders combined, by name (one grader is named by its name)'),
  calculate_output: z.string().min(1).max(1_000).describe('Formula over the graders’ names: numbers, + - * /, parentheses, min, max, abs'),
});
export const Grader = z
  .discriminatedUnion('type', [StringCheckGrader, TextSimilarityGrader, PythonGrader, ScoreModelGrader, MultiGrader])
  .superRefine((grader, ctx) => {
    for (const problem of graderProblems(namedGraders(grader) as GraderLike)) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
  })
  .meta({ id: 'Grader' });
/** The JSON Schema every sampled answer of a reinforcement (grpo) job follows: OpenAI's json_schema response_format.
 *  Sampling is constrained to it, so every answer parses and graders read its fields as {{sample.output_json.<field>}}. */
export const SampleResponseFormat = z
  .object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string().min(1).max(64),
      schema: z.record(z.string(), z.unknown()).describe('The JSON Schema each answer follows (a schema constrained decoding cannot follow fails the job at its start, saying what)'),
      strict: nullable(z.boolean()).optional(),
      description: z.string().max(10_000).optional(),
    }),
  })
  .meta({ id: 'SampleResponseFormat' });
export type SampleResponseFormat = z.infer<typeof SampleResponseFormat>;
/** A multi grader's graders as a map by name (the SDK's type also allows one grader, named by its name). */
export function namedGraders<G extends { type: string }>(grader: G): G {
  if (grader.type !== 'multi') return grader;
  const graders = (grader as unknown as { graders: Record<string, unknown> & { type?: unknown; name?: string } }).graders;
  return typeof graders.type === 'string' ? { ...grader, graders: { [graders.name as string]: graders } } : grader;
}
export type Grader = z.infer<typeof Grader>;


