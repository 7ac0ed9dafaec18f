// Pairwise comparisons (POST /comparisons, #61), for the API and the worker alike: what is checked before a worker is
// asked (the dataset ready, both models the caller's and completed, the judge one they may ask), the judging of the
// pairs in both orders (pairwise.ts reads and counts the verdicts), and how a stored comparison reads.
import { NotFound, type ComparisonRow, type Platform } from '@ftp/platform';
import { Comparison, ComparisonResult, StoredComparisonRequest, type ChatMessage, type ComparisonCreateRequest, type JudgeSettings } from '@ftp/schema';
import { checkModelChoice } from '../models/index.ts';
import { evaluateQueue, requestFromWorker } from '../queues/index.ts';
import { plainConversation } from './conversations.ts';
import { askJudge, checkScoredDataset, routeJudge } from './grading.ts';
import { judgeMessages, outcomeOf, readVerdict, summarize, type PairJudgement } from './pairwise.ts';

/** Checks what can be checked here, has a worker run the comparison while the client waits (cancelled there when
 *  `lifetime` aborts), and answers the row the worker wrote. */
export async function createComparison(platform: Platform, userId: string, request: ComparisonCreateRequest, lifetime?: AbortSignal): Promise<ComparisonRow> {
  const { hub_token: hubToken, ...stored } = request;
  await checkScoredDataset(platform, userId, stored, ['body']);
  await checkModelChoice(platform, userId, stored.model_a, hubToken);
  await checkModelChoice(platform, userId, stored.model_b, hubToken);
  await routeJudge(platform, userId, stored.judge.model);
  const { comparison_id: id } = (await requestFromWorker(platform, evaluateQueue, { userId, compare: stored }, hubToken, 'the comparison', lifetime ? { signal: lifetime } : {})) as { comparison_id: string };
  const row = await platform.comparisons.get(userId, id);
  if (!row) throw new NotFound('comparison', id); // deleted between its worker's answer and this read
  return row;
}

export interface ComparedRow {
  /** The row of the split (0-based). */
  index: number;
  prompt: ChatMessage[];
}

/** Each pair put to the judge twice, A's answer first and then B's, the replies read and counted (pairwise.ts). */
export async function judgePairs(
  platform: Platform,
  userId: string,
  judge: JudgeSettings,
  rows: readonly ComparedRow[],
  answers: { a: readonly string[]; b: readonly string[] },
  signal?: AbortSignal,
): Promise<Omit<ComparisonResult, 'split' | 'warnings'>> {
  const request = (row: ComparedRow) => plainConversation(row.prompt).map((m) => `${m.role}: ${m.content}`).join('\n');
  const chats = rows.flatMap((row, i) => [
    judgeMessages(request(row), answers.a[i]!, answers.b[i]!, judge.criteria),
    judgeMessages(request(row), answers.b[i]!, answers.a[i]!, judge.criteria),
  ]);
  const replies = await askJudge(platform, userId, judge.model, chats, judge.max_tokens, signal);
  const judgements: PairJudgement[] = rows.map((row, i) => ({ index: row.index, aFirst: readVerdict(replies[2 * i]!), bFirst: readVerdict(replies[2 * i + 1]!) }));
  const { pairs, counts, rates, win_share, interval, position_consistency, flipped, unreadable, winner } = summarize(judgements);
  const verdicts = rows.map((row, i) => {
    const judgement = judgements[i]!;
    const { outcome, consistent } = outcomeOf(judgement);
    return {
      sample_index: row.index,
      prompt: row.prompt,
      answer_a: answers.a[i]!,
      answer_b: answers.b[i]!,
      a_first: judgement.aFirst,
      b_first: judgement.bFirst,
      reply_a_first: replies[2 * i]!,
      reply_b_first: replies[2 * i + 1]!,
      outcome,
      consistent,
    };
  });
  return { pairs, counts, rates, win_share, interval, position_consistency, flipped, unreadable, winner, verdicts };
}

export function presentComparison(row: ComparisonRow): Comparison {
  const request = StoredComparisonRequest.parse(row.request);
  return {
    id: row.comparison_id,
    dataset_id: row.processed_dataset_id,
    model_a: request.model_a,
    model_b: request.model_b,
    judge: request.judge,
    request,
    ...ComparisonResult.parse(row.result),
    elapsed_seconds: row.elapsed_seconds,
    created_at: new Date(row.created_at).toISOString(),
  };
}

export async function deleteComparison(platform: Platform, userId: string, comparisonId: string): Promise<void> {
  if (!(await platform.comparisons.delete(userId, comparisonId))) throw new NotFound('comparison', comparisonId);
}
