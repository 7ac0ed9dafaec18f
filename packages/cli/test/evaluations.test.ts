// ftune evaluations: the results as rows (lm-eval's value ± its stderr per task and metric, HumanEval's pass@k, the
// base's figure beside the model's). Its usage errors are in usage.test.ts.
import { describe, expect, it } from 'vitest';
import { resultRows } from '../src/commands/evaluations.ts';

const lmEval = (acc: number, exact: number) => ({
  results: { qa_choice: { acc: { value: acc, stderr: 0.25, filter: 'none' } }, qa_answer: { exact_match: { value: exact, stderr: null, filter: 'none' } } },
  n_samples: {}, versions: {}, config: {},
});
const humaneval = (pass: number) => ({ 'pass@1': pass, problems: 1, samples: 1, timeout: 3, per_problem: {} });

describe('resultRows', () => {
  it('gives a row per task and metric and per pass@k, the base beside the model', () => {
    const rows = resultRows({ results: { lm_eval: lmEval(0.75, 1), humaneval: humaneval(0.5) }, base_results: { lm_eval: lmEval(0.25, 0), humaneval: humaneval(0) } });
    expect(rows).toEqual([
      ['qa_choice', 'acc', '0.75 ± 0.25', '0.25'],
      ['qa_answer', 'exact_match', '1', '0'],
      ['humaneval', 'pass@1', '0.5', '0'],
    ]);
  });

  it('gives a row per dataset metric (a metric’s parts each), the base beside the model', () => {
    const dataset = (f1: number, rouge1: number) => ({ metrics: { f1, rouge: { rouge1 } }, num_samples: 2, dataset_id: 'pd_1', samples: [], warnings: [], notes: [] });
    expect(resultRows({ results: { dataset: dataset(0.5, 0.25) }, base_results: { dataset: dataset(0, 0.125) } })).toEqual([
      ['dataset pd_1', 'f1', '0.5', '0'],
      ['dataset pd_1', 'rouge.rouge1', '0.25', '0.125'],
    ]);
  });

  it('has no base column without a base, and no rows before results', () => {
    expect(resultRows({ results: { lm_eval: lmEval(1 / 3, 1) }, base_results: null })[0]).toEqual(['qa_choice', 'acc', '0.3333 ± 0.25']);
    expect(resultRows({ results: null, base_results: null })).toEqual([]);
  });
});
