// The three augmentation methods that ask a language model (decisions.md, "Preprocessing"), each on the column values
// that fill messages, before templates are filled (as EDA): back-translation through a pivot language and back,
// paraphrasing of the user turn (the assistant turn kept), and synthesis of new rows in the dataset's style. Each
// returns undefined for a bad generation (not JSON of the asked shape, empty, or the source unchanged), which the
// caller drops and counts; LlmUnavailable from the client ends the run.
import { z } from 'zod';
import type { LlmClient } from './llm.ts';

/** The language back-translation goes through. */
export const PIVOT_LANGUAGE = 'French';

/** The longest text asked for in place of one of `length` characters: a bound the asked schema states, so a model
 *  that rambles (or a tiny test model) is cut off by constrained decoding instead of running to max_tokens. Answers
 *  are not refused for it: a server may count the bound in bytes or tokens, not characters. */
const bound = (length: number, factor: number): number => Math.max(64, Math.ceil(length * factor));
const Translation = z.strictObject({ translation: z.string().min(1) });
const Paraphrase = z.strictObject({ paraphrase: z.string().min(1) });
const translation = (length: number) => ({ ask: z.strictObject({ translation: z.string().min(1).max(bound(length, 3)) }), accept: Translation });
const paraphrased = (length: number) => ({ ask: z.strictObject({ paraphrase: z.string().min(1).max(bound(length, 2)) }), accept: Paraphrase });

const KEEP = 'Keep code, URLs, numbers, dates and names exactly as they are.';

/** Sampled, not greedy (temperature 0.7): for back-translation as augmentation, sampled translations help training
 *  more than the most likely one (Edunov et al. 2018, "Understanding Back-Translation at Scale"). */
async function translate(llm: LlmClient, text: string, into: string, seed?: number): Promise<string | undefined> {
  const answer = await llm.json('translation', translation(text.length), [
    { role: 'system', content: `Translate the user's text into ${into}. ${KEEP} Answer with JSON: {"translation": "..."}.` },
    { role: 'user', content: text },
  ], 0.7, seed);
  return answer?.translation.trim() || undefined;
}

/** `text` into the pivot language and back to English: the same meaning in other words. */
export async function backTranslate(llm: LlmClient, text: string, seed?: number): Promise<string | undefined> {
  const pivot = await translate(llm, text, PIVOT_LANGUAGE, seed);
  if (!pivot) return undefined;
  const back = await translate(llm, pivot, 'English', seed);
  return back && back !== text ? back : undefined;
}

/** `text` said differently, meaning kept. */
export async function paraphrase(llm: LlmClient, text: string, seed?: number): Promise<string | undefined> {
  const answer = await llm.json('paraphrase', paraphrased(text.length), [
    { role: 'system', content: `Rewrite the user's text so it means the same thing in different words. ${KEEP} Answer with JSON: {"paraphrase": "..."}.` },
    { role: 'user', content: text },
  ], 0.7, seed);
  const rewritten = answer?.paraphrase.trim();
  return rewritten && rewritten !== text ? rewritten : undefined;
}

/** One new row for `columns` in the style of `examples` (rows of the dataset), following `instruction`
 *  (augmentation_config.custom_prompt); undefined when the answer lacks a column, has an empty one, or copies an example. */
export async function synthesizeRow(
  llm: LlmClient,
  options: { columns: string[]; examples: Array<Record<string, string>>; instruction?: string | null | undefined; seed?: number },
): Promise<Record<string, string> | undefined> {
  const { columns, examples } = options;
  const longest = (column: string) => Math.max(0, ...examples.map((example) => (example[column] ?? '').length));
  const ask = z.strictObject(Object.fromEntries(columns.map((column) => [column, z.string().min(1).max(bound(longest(column), 2))])));
  const accept = z.strictObject(Object.fromEntries(columns.map((column) => [column, z.string().min(1)])));
  const answer = await llm.json('row', { ask, accept }, [
    {
      role: 'system',
      content:
        `You write new examples for a dataset. Each example is a JSON object with the keys ${columns.map((c) => JSON.stringify(c)).join(', ')}. ` +
        'Write one new example in the style of the given ones, on a different subject, not a copy.' +
        (options.instruction ? ` ${options.instruction}` : ''),
    },
    { role: 'user', content: examples.map((example) => JSON.stringify(Object.fromEntries(columns.map((c) => [c, example[c] ?? ''])))).join('\n') },
  ], 1, options.seed);
  if (!answer) return undefined;
  const row = Object.fromEntries(columns.map((column) => [column, String(answer[column]).trim()]));
  if (columns.some((column) => !row[column])) return undefined;
  if (examples.some((example) => columns.every((column) => example[column] === row[column]))) return undefined;
  return row;
}
