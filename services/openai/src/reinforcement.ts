// OpenAI's reinforcement fine-tuning as a GRPO job: the grader becomes the job's one reward (the core grades with it,
// core/src/ftcore/evaluation/graders.py), and the hyperparameters map onto GRPO's: compute_multiplier is the number of answers
// sampled per prompt (4 × it, at least 2), batch_size the prompts a step, eval_interval the steps between
// evaluations of the validation file, eval_samples how many of its lines they grade; the rest is TRL's GRPO defaults.
// reasoning_effort other than default is refused (the schema's). A score_model grader's judge is one of this stack's
// models run with the owner's rights (a relay on the worker), or with LLM_API_BASE set, any other model.
import { namedGraders, type CreateFineTuningJobRequest, type Grader, type RewardConfig } from '@ftp/schema';

type Requested = NonNullable<Extract<NonNullable<CreateFineTuningJobRequest['method']>, { type: 'reinforcement' }>['reinforcement']['hyperparameters']>;

/** Answers sampled per prompt when compute_multiplier is 1 (TRL's GRPO default is 8; 4 keeps a step affordable on a
 *  small machine, and 2 is the least that has something to compare). */
export const GENERATIONS_PER_MULTIPLIER = 4;
/** Tokens an answer may take, and the prompt before it, at most (each also within the model's context). */
const MAX_COMPLETION_TOKENS = 256;
const MAX_PROMPT_TOKENS = 512;

export interface ReinforcementFacts {
  compute_multiplier: number;
  eval_interval: number | null;
  eval_samples: number | null;
}

/** The reinforcement settings with "auto" resolved. */
export function resolveReinforcement(requested: Requested | undefined): ReinforcementFacts {
  const auto = <T>(value: T | 'auto' | undefined, fallback: T): T => (value === undefined || value === 'auto' ? fallback : value);
  return {
    compute_multiplier: auto(requested?.compute_multiplier, 1),
    eval_interval: auto<number | null>(requested?.eval_interval, null),
    eval_samples: auto<number | null>(requested?.eval_samples, null),
  };
}

/** The grader as the job's reward_config item (a multi grader's graders by name). */
export function rewardOf(grader: Grader): RewardConfig {
  if (grader.type === 'python') return { type: 'python', name: grader.name, source: grader.source };
  if (grader.type === 'multi') {
    const named = namedGraders(grader).graders as Record<string, Grader>;
    const graders = Object.fromEntries(Object.entries(named).map(([name, sub]) => [name, rewardOf(sub)]));
    return { type: 'multi', name: grader.name, graders: graders as never, calculate_output: grader.calculate_output };
  }
  if (grader.type === 'string_check') return { type: 'string_check', name: grader.name, input: grader.input, reference: grader.reference, operation: grader.operation };
  if (grader.type === 'text_similarity') return { type: 'text_similarity', name: grader.name, input: grader.input, reference: grader.reference, evaluation_metric: grader.evaluation_metric };
  return { type: 'score_model', name: grader.name, model: grader.model, input: grader.input, range: (grader.range as [number, number] | undefined) ?? [0, 1], ...(grader.sampling_params ? { sampling_params: grader.sampling_params } : {}) };
}

/** GRPO's settings for a reinforcement job, and the answers a step samples (its batch: `prompts` × the generations). */
export function grpoHyperparameters(facts: ReinforcementFacts, prompts: number, context: number): { completions: number; settings: Record<string, unknown> } {
  const generations = Math.max(2, Math.round(GENERATIONS_PER_MULTIPLIER * facts.compute_multiplier));
  const promptTokens = Math.min(MAX_PROMPT_TOKENS, Math.floor(context / 2));
  return {
    completions: prompts * generations,
    settings: {
      // TRL's own GRPO defaults, where this project's (the interface's SFT sample) would hold the policy back: no KL
      // term (beta 0) and the usual gradient clip.
      beta: 0,
      max_grad_norm: 1,
      num_generations: generations,
      max_prompt_length: promptTokens,
      max_completion_length: Math.min(MAX_COMPLETION_TOKENS, context - promptTokens),
      max_length: context,
    },
  };
}
