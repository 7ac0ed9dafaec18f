// GRPO reward functions as the training service documents them (RewardConfig in openapi/training.json: one variant
// per `type`, each with its fields, their enums and which are required), and the form's drafts of them turned into
// the reward_config the API expects.
import { components } from '../../../../../../openapi/training.json';

export interface RewardFieldSchema {
  type?: string;
  enum?: readonly string[];
  default?: unknown;
  description?: string;
  items?: { type?: string };
  prefixItems?: ReadonlyArray<{ type?: string }>;
}

export interface RewardKind {
  type: string;
  /** Every field but `type`, in the documented order. */
  fields: Record<string, RewardFieldSchema>;
  required: readonly string[];
}

type Variant = { properties: Record<string, RewardFieldSchema & { const?: string }>; required: readonly string[] };

export const REWARD_KINDS: RewardKind[] = (components.schemas.RewardConfig.oneOf as unknown as Variant[]).map((variant) => {
  const { type, ...fields } = variant.properties;
  return { type: type!.const!, fields, required: variant.required.filter((name) => name !== 'type') };
});

export function rewardKind(type: string): RewardKind {
  return REWARD_KINDS.find((k) => k.type === type) ?? REWARD_KINDS[0]!;
}

/** One reward as the form holds it: its type and the values typed so far (numbers may still be text). */
export interface RewardDraft {
  /** Stable across edits and removals (React's key). */
  id: number;
  type: string;
  values: Record<string, unknown>;
}

let nextId = 0;

/** A new reward of `type` with its documented defaults, keeping what another kind had of the same fields (a name,
 *  a weight, a reference column) when the type is changed. */
export function draftOf(type: string, keep: Record<string, unknown> = {}, id = nextId++): RewardDraft {
  const kind = rewardKind(type);
  const values: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(kind.fields)) {
    if (keep[name] !== undefined) values[name] = keep[name];
    else if (field.default !== undefined) values[name] = field.default;
    else if (field.enum && kind.required.includes(name)) values[name] = field.enum[0];
  }
  return { id, type, values };
}

/** The form's first reward: the format check, which needs no column. */
export const initialRewards = (): RewardDraft[] => [draftOf('built_in', { name: 'format', function_name: 'format_reward' })];

function cleanValue(field: RewardFieldSchema, value: unknown): unknown {
  if (value === '' || value === undefined || value === null) return undefined;
  if (field.type === 'number') return typeof value === 'number' ? value : Number(value);
  // JSON typed into a text box; what does not parse is sent as typed, and the API's 422 says what it expected.
  if ((field.type === 'object' || (field.type === 'array' && field.items?.type === 'object')) && typeof value === 'string') {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value.trim() || undefined;
    }
  }
  if (field.prefixItems) {
    const numbers = (value as unknown[]).map((v) => (v === '' || v === undefined ? undefined : Number(v)));
    return numbers.every((n) => n !== undefined) ? numbers : undefined;
  }
  if (Array.isArray(value)) return value.length > 0 ? value : undefined;
  return typeof value === 'string' ? value.trim() || undefined : value;
}

/** reward_config as POST /train takes it: empty fields left out (a missing required one gets the API's sentence). */
export function rewardConfig(drafts: readonly RewardDraft[]): Array<Record<string, unknown>> {
  return drafts.map((draft) => {
    const kind = rewardKind(draft.type);
    const fields = Object.entries(kind.fields).flatMap(([name, field]) => {
      const value = cleanValue(field, draft.values[name]);
      return value === undefined ? [] : [[name, value]];
    });
    return { type: draft.type, ...Object.fromEntries(fields) };
  });
}
