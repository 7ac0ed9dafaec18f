// The task of bench/augment: route a short customer message to one of four teams (the answer is the team's name).
// Train and test messages come from different templates and a different vocabulary ("charged twice" in train, "took
// money from me two times" in test), so a model that only learned the training words fails on the test wording:
// the gap that EDA's synonym replacement, insertion, swap and deletion are meant to close.
import { planSplit, seededRandom, TEST } from '../../packages/datasets/src/processing/splits.ts';

export const TEAMS = ['billing', 'shipping', 'account', 'technical'] as const;
export type Team = (typeof TEAMS)[number];

// Short on purpose: every token of it is trained on and costs time on a CPU.
export const INSTRUCTION = 'Which team handles this message: billing, shipping, account or technical?';

interface Wording {
  templates: Record<Team, string[]>;
  slots: Record<string, string[]>;
}

const TRAIN: Wording = {
  templates: {
    billing: [
      'I was charged twice for my {plan} subscription.',
      'Why is my bill for the {plan} plan higher this month?',
      'Please explain the extra fee on my invoice for the {item}.',
      'My card was billed the wrong amount for the {item}.',
      'I need a receipt for the {item} I bought {when}.',
      'The price I paid for the {item} does not match the offer.',
    ],
    shipping: [
      'My order of {item} has not arrived yet.',
      'Where is my package? I ordered the {item} {when}.',
      'The tracking number for my {item} does not work.',
      'Can you ship the {item} to a different address?',
      'The {item} was delivered to the wrong house.',
      'How long does delivery take for the {item}?',
    ],
    account: [
      'I forgot my password and cannot log in on my {device}.',
      'How do I change the {field} on my profile?',
      'Please delete my account and all my data.',
      'I want to update the {field} on my account.',
      'I think someone else logged into my account from a {device}.',
      'How do I turn on two-step login for my account on my {device}?',
    ],
    technical: [
      'The app crashes when I open it on my {device}.',
      'The website shows an error when I try to {action}.',
      'My {device} will not connect to the app.',
      'The page keeps loading forever when I {action}.',
      'The app is very slow on my {device} since the update.',
      'I get an error code whenever I {action} on my {device}.',
    ],
  },
  slots: {
    item: ['headphones', 'coffee maker', 'desk lamp', 'running shoes', 'phone case', 'backpack'],
    plan: ['monthly', 'yearly', 'premium', 'family'],
    when: ['last week', 'on Monday', 'three days ago', 'yesterday'],
    device: ['phone', 'tablet', 'laptop'],
    field: ['email address', 'phone number', 'home address', 'display name'],
    action: ['check out', 'search for a product', 'upload a photo', 'open my cart'],
  },
};

const TEST_WORDING: Wording = {
  templates: {
    billing: [
      'You took money from me two times for the {item}.',
      'There is a payment from {when} on my statement that I do not recognise.',
      'How come I was debited more than the listed cost of the {item}?',
      'Could you send me proof of what I paid for the {item}?',
      'The {plan} membership cost more than you advertised.',
    ],
    shipping: [
      'The parcel with my {item} never came.',
      'I am still waiting for the courier to bring the {item} I bought {when}.',
      'Your driver dropped off my {item} at the wrong door.',
      'When will the {item} reach me?',
      'Please send the {item} to my office instead of my home.',
    ],
    account: [
      'I cannot sign in to my profile on my {device} anymore.',
      'Help me reset the secret code I use to sign in on my {device}.',
      'Please close my profile for good.',
      'I would like to edit the {field} stored in my user settings.',
      'A stranger got into my profile without my permission.',
    ],
    technical: [
      'The program freezes every time I {action} on my {device}.',
      'I keep getting a blank screen when I {action}.',
      'Your software stops responding on my {device}.',
      'The site will not let me {action}; it just shows a bug message.',
      'Nothing happens when I tap the button to {action} on my {device}.',
    ],
  },
  slots: {
    item: ['blender', 'winter jacket', 'keyboard', 'water bottle', 'camping tent'],
    plan: ['annual', 'student', 'gold'],
    when: ['a fortnight ago', 'on Friday', 'ten days ago'],
    device: ['smart TV', 'computer', 'watch'],
    field: ['contact number', 'mailing address', 'nickname'],
    action: ['pay', 'view my orders', 'add a review'],
  },
};

export interface TaskRow {
  text: string;
  team: string;
}

function message(wording: Wording, team: Team, random: () => number): string {
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  return pick(wording.templates[team]).replace(/\{(\w+)\}/g, (_, slot: string) => pick(wording.slots[slot]!));
}

/** `trainRows` rows in the train wording and `testRows` in the test wording, each team equally often in each. */
export function routingTask(trainRows: number, testRows: number, seed = 13): { train: TaskRow[]; test: TaskRow[] } {
  const random = seededRandom(seed);
  const rows = (wording: Wording, n: number) => Array.from({ length: n }, (_, i) => {
    const team = TEAMS[i % TEAMS.length]!;
    return { text: message(wording, team, random), team };
  });
  return { train: rows(TRAIN, trainRows), test: rows(TEST_WORDING, testRows) };
}

/**
 * The rows of both splits in one upload order such that the pipeline's seeded manual split (test_size = test.length)
 * gives exactly `train` as its train split and `test` as its test split, each in its order.
 */
export function arrangeForSplit<T>(train: T[], test: T[]): T[] {
  const plan = planSplit({ numRows: train.length + test.length, testSize: test.length, loc: [] });
  let t = 0;
  let r = 0;
  return Array.from(plan.assignment, (split) => (split === TEST ? test[t++]! : train[r++]!));
}

/** The rows as CSV (every field quoted). */
export function toCsv(rows: TaskRow[]): string {
  const quote = (s: string) => `"${s.replaceAll('"', '""')}"`;
  return ['text,team', ...rows.map((r) => `${quote(r.text)},${quote(r.team)}`)].join('\n') + '\n';
}
