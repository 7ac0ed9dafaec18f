// An evaluation's numbers as rows, as `ftune evaluations get` prints them: one per lm-eval task and metric (its value
// ± lm-eval's stderr) and one per HumanEval pass@k, with the base model's figure beside each when with_base ran it.
import type { BenchmarkResults, Evaluation } from '../../api/types.ts';
import { formatNumber } from '../../components/format.ts';

export interface ResultRow {
  task: string;
  metric: string;
  value: string;
  /** Present when the evaluation has base_results. */
  base?: string;
}

type Score = { value: number | null; stderr: number | null } | undefined;

const scored = (score: Score) => `${formatNumber(score?.value)}${score?.stderr == null ? '' : ` ± ${formatNumber(score.stderr)}`}`;
const passAt = (results: BenchmarkResults | null | undefined) => Object.entries(results?.humaneval ?? {}).filter(([key]) => key.startsWith('pass@'));

export function resultRows(evaluation: Pick<Evaluation, 'results' | 'base_results'>): ResultRow[] {
  const base = evaluation.base_results;
  const rows: ResultRow[] = [];
  for (const [task, metrics] of Object.entries(evaluation.results?.lm_eval?.results ?? {})) {
    for (const [metric, score] of Object.entries(metrics)) {
      rows.push({ task, metric, value: scored(score), ...(base ? { base: scored(base.lm_eval?.results[task]?.[metric]) } : {}) });
    }
  }
  for (const [key, value] of passAt(evaluation.results)) {
    rows.push({ task: 'humaneval', metric: key, value: formatNumber(value), ...(base ? { base: formatNumber(base.humaneval?.[key]) } : {}) });
  }
  return rows;
}
