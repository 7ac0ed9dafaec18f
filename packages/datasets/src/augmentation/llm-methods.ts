// The three augmentation methods that ask a language model (decisions.md, "Preprocessing"), each on the column values
// that fill messages, before templates are filled (as EDA): back-translation through a pivot language and back,
// paraphrasing of the user turn (the assistant turn kept), and synthesis of new rows in the dataset's style. Each
// returns undefined for a bad generation (not JSON of the asked shape, empty, or the source unchanged), which the
// caller drops and counts; LlmUnavailable from the client ends the run.
import { z } from 'zod';
import type { LlmClient } from './llm.ts';

/** The language back-translation goes through. */
export const PIVOT_LANGUAGE = 'French';

const Translation = z.strictObject({ translation: z.string().min(1) });
const Paraphrase = z.strictObject({ paraphrase: z.string().min(1) });

const KEEP = 'Keep code, URLs, numbers, dates and names exactly as they are.';

async function translate(llm: LlmClient, text: string, into: string): Promise<string | undefined> {
  const answer = await llm.json('translation', Translation, [
    { role: 'system', content: `Translate the user's text into ${into}. ${KEEP} Answer with JSON: {"translation": "..."}.` },
    { role: 'user', content: text },
  ], 0.3);
  return answer?.translation.trim() || undefined;
}

/** `text` into the pivot language and back to English: the same meaning in other words. */
export async function backTranslate(llm: LlmClient, text: string): Promise<string | undefined> {
  const pivot = await translate(llm, text, PIVOT_LANGUAGE);
  if (!pivot) return undefined;
  const back = await translate(llm, pivot, 'English');
  return back && back !== text ? back : undefined;
}

/** `text` said differently, meaning kept. */
export async function paraphrase(llm: LlmClient, text: string): Promise<string | undefined> {
  const answer = await llm.json('paraphrase', Paraphrase, [
    { role: 'system', content: `Rewrite the user's text so it means the same thing in different words. ${KEEP} Answer with JSON: {"paraphrase": "..."}.` },
    { role: 'user', content: text },
  ]);
  const rewritten = answer?.paraphrase.trim();
  return rewritten && rewritten !== text ? rewritten : undefined;
}

/** One new row for `columns` in the style of `examples` (rows of the dataset), following `instruction`
 *  (augmentation_config.custom_prompt); undefined when the answer lacks a column, has an empty one, or copies an example. */
export async function synthesizeRow(
  llm: LlmClient,
  options: { columns: string[]; examples: Array<Record<string, string>>; instruction?: string | null | undefined },
): Promise<Record<string, string> | undefined> {
  const { columns, examples } = options;
  const shape = z.strictObject(Object.fromEntries(columns.map((column) => [column, z.string().min(1)])));
  const answer = await llm.json('row', shape, [
    {
      role: 'system',
      content:
        `You write new examples for a dataset. Each example is a JSON object with the keys ${columns.map((c) => JSON.stringify(c)).join(', ')}. ` +
        'Write one new example in the style of the given ones, on a different subject, not a copy.' +
        (options.instruction ? ` ${options.instruction}` : ''),
    },
    { role: 'user', content: examples.map((example) => JSON.stringify(Object.fromEntries(columns.map((c) => [c, example[c] ?? ''])))).join('\n') },
  ], 1);
  if (!answer) return undefined;
  const row = Object.fromEntries(columns.map((column) => [column, String(answer[column]).trim()]));
  if (columns.some((column) => !row[column])) return undefined;
  if (examples.some((example) => columns.every((column) => example[column] === row[column]))) return undefined;
  return row;
}
