// README.md as runnable steps: its ```sh and ```python blocks in order (a block after `<!-- readme-test: skip: reason -->`
// is left out, with its reason), a shell block split into commands (a command ends where bash finds it complete),
// each command with the answer the README shows after it (`# → …`), and that answer compared with what the command
// printed: by its shape, and by every value the README writes out (`…` stands for what varies from run to run).
import { execFileSync } from 'node:child_process';

export interface Block {
  lang: 'sh' | 'python';
  code: string;
  /** 1-based line of the block's first line of code in README.md. */
  line: number;
  skip?: string;
}

export interface Step {
  command: string;
  line: number;
  /** The README's `# → …` after the command, continuation lines joined. */
  expected?: string;
}

const SKIP = /^<!--\s*readme-test:\s*skip:\s*(.+?)\s*-->$/;

export function readmeBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    const lang = open[1] === 'sh' || open[1] === 'bash' ? 'sh' : open[1] === 'python' ? 'python' : undefined;
    if (lang) {
      const marker = SKIP.exec(lines.slice(0, i).reverse().find((l) => l.trim() !== '')?.trim() ?? '');
      blocks.push({ lang, code: lines.slice(i + 1, end).join('\n'), line: i + 2, ...(marker ? { skip: marker[1]! } : {}) });
    }
    i = end;
  }
  return blocks;
}

/** Whether bash reads `text` as complete commands (no open quote, brace or trailing backslash). */
function complete(text: string): boolean {
  if (/\\\s*$/.test(text)) return false;
  try {
    execFileSync('bash', ['-n'], { input: text, stdio: ['pipe', 'ignore', 'ignore'] });
    return true;
  } catch {
    return false;
  }
}

/** A shell block's commands, each with the answer shown after it. Comment lines between commands are prose. */
export function shellSteps(block: Block): Step[] {
  const steps: Step[] = [];
  let pending: { lines: string[]; line: number } | undefined;
  let answer: Step | undefined; // the step whose `# →` continues on the following comment lines
  block.code.split('\n').forEach((text, index) => {
    const line = block.line + index;
    if (pending) {
      pending.lines.push(text);
      if (complete(pending.lines.join('\n'))) {
        steps.push({ command: pending.lines.join('\n'), line: pending.line });
        pending = undefined;
      }
      return;
    }
    const arrow = /^#\s*→\s?(.*)$/.exec(text.trim());
    if (arrow && steps.length > 0) {
      answer = steps.at(-1)!;
      answer.expected = arrow[1]!;
      return;
    }
    if (answer && /^#\s{3,}\S/.test(text)) {
      answer.expected += ` ${text.replace(/^#\s+/, '')}`;
      return;
    }
    answer = undefined;
    if (text.trim() === '' || text.trim().startsWith('#')) return;
    if (complete(text)) steps.push({ command: text, line });
    else pending = { lines: [text], line };
  });
  if (pending) throw new Error(`README.md line ${pending.line}: the command never ends (an open quote?)`);
  return steps;
}

const ANY = '\u0000any';
const MORE = '\u0000more';

/** The README's answer as a value to compare: JSON where `…` may stand for a value, an array's items or its rest. */
function expectedValue(expected: string): unknown {
  const json = expected
    .replace(/\[…\]/g, JSON.stringify(ANY))
    .replace(/:\s*…(?=\s*[,}\]])/g, `:${JSON.stringify(ANY)}`)
    .replace(/,\s*…\s*\]/g, `,${JSON.stringify(MORE)}]`)
    .replace(/,\s*…\s*\}/g, '}');
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}

const pattern = (text: string) => new RegExp(`^${text.split('…').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[\\s\\S]*')}$`);

/** Where `actual` differs from `expected` (a path and what was found), or undefined when it matches. */
function difference(expected: unknown, actual: unknown, at: string): string | undefined {
  if (expected === ANY) return undefined;
  if (typeof expected === 'string' && expected.includes('…')) {
    return typeof actual === 'string' && pattern(expected).test(actual) ? undefined : `${at}: ${JSON.stringify(actual)} is not ${JSON.stringify(expected)}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${at}: ${JSON.stringify(actual)} is not an array`;
    const open = expected.at(-1) === MORE;
    const items = open ? expected.slice(0, -1) : expected;
    if (open ? actual.length < items.length : actual.length !== items.length) return `${at}: ${actual.length} items, the README shows ${items.length}${open ? ' or more' : ''}`;
    for (const [i, item] of items.entries()) {
      const found = difference(item, actual[i], `${at}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${at}: ${JSON.stringify(actual)} is not an object`;
    for (const [key, value] of Object.entries(expected)) {
      if (!(key in actual)) return `${at}.${key}: missing`;
      const found = difference(value, (actual as Record<string, unknown>)[key], `${at}.${key}`);
      if (found) return found;
    }
    return undefined;
  }
  return expected === actual ? undefined : `${at}: ${JSON.stringify(actual)}, the README shows ${JSON.stringify(expected)}`;
}

/** Compares what a command printed with the README's answer: as JSON when the answer is JSON, else as text. */
export function answerDifference(expected: string, printed: string): string | undefined {
  const value = expectedValue(expected);
  if (value === undefined) return pattern(`…${expected.trim()}…`).test(printed) ? undefined : `the output does not show ${JSON.stringify(expected)}`;
  let actual: unknown;
  try {
    actual = JSON.parse(printed);
  } catch {
    return `the output is not JSON: ${printed.slice(0, 300)}`;
  }
  return difference(value, actual, 'answer');
}
