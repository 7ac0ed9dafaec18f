// EDA (Wei & Zou 2019, "EDA: Easy Data Augmentation Techniques for Boosting Performance on Text Classification
// Tasks"): synonym replacement from WordNet, random insertion of a synonym, random swap and random deletion, each
// changing about alpha × the words of a text. Only words move or change: code (fenced or inline), URLs, e-mail
// addresses, numbers, dates, times, month and day names keep their text and place, and so does punctuation.
import type { WordNet } from './wordnet.ts';

export const EDA_OPERATIONS = ['synonym_replacement', 'random_insertion', 'random_swap', 'random_deletion'] as const;
export type EdaOperation = (typeof EDA_OPERATIONS)[number];

/** Spans EDA never touches, tried in this order; anything else that is a run of letters is a word. */
const PROTECTED = [
  /```[\s\S]*?(?:```|$)/y, // fenced code, to its end (or the text's end when unclosed)
  /`[^`\n]*`/y, // inline code
  /(?:[a-z][a-z0-9+.-]*:\/\/|www\.)[^\s<>"'`]+/iy, // URLs
  /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/y, // e-mail addresses
  /\d{1,4}(?:[-/.:]\d{1,4})+(?:\s?[ap]\.?m\.?)?/iy, // dates and times: 2024-05-01, 1/5/24, 12:30 pm
  /[+-]?\d+(?:[.,]\d+)*(?:st|nd|rd|th|%|[a-z]{1,3})?/iy, // numbers: 3, 1,000.5, 21st, 15%, 5kg
];
const WORD = /\p{L}+(?:['’-]\p{L}+)*/uy;
const CALENDAR = new Set(
  'january february march april may june july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun today tomorrow yesterday'.split(' '),
);
// The stop words of the EDA paper's reference code (NLTK's English list): never replaced by a synonym.
const STOP_WORDS = new Set(
  ("i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it its itself they them " +
    "their theirs themselves what which who whom this that these those am is are was were be been being have has had having do does did " +
    "doing a an the and but if or because as until while of at by for with about against between into through during before after above " +
    "below to from up down in out on off over under again further then once here there when where why how all any both each few more most " +
    "other some such no nor not only own same so than too very s t can will just don should now").split(' '),
);

type Token = { text: string; word: boolean };

/** The text as tokens that together spell it exactly; `word` marks those EDA may change, move or delete. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let plain = '';
  let at = 0;
  const flush = () => {
    if (plain) tokens.push({ text: plain, word: false });
    plain = '';
  };
  outer: while (at < text.length) {
    // A protected span or a word only starts at a boundary: not inside a run of letters or digits.
    const boundary = at === 0 || !/[\p{L}\p{N}_]/u.test(text[at - 1]!);
    if (boundary) {
      for (const pattern of PROTECTED) {
        pattern.lastIndex = at;
        const match = pattern.exec(text);
        if (match && match[0].length > 0) {
          plain += match[0];
          at += match[0].length;
          continue outer;
        }
      }
      WORD.lastIndex = at;
      const word = WORD.exec(text);
      if (word) {
        flush();
        const protectedWord = CALENDAR.has(word[0].toLowerCase());
        tokens.push({ text: word[0], word: !protectedWord });
        at += word[0].length;
        continue;
      }
    }
    plain += text[at];
    at += 1;
  }
  flush();
  return tokens;
}

/** A synonym spelt like the word it replaces: capitalised when that was. */
function matchCase(synonym: string, like: string): string {
  return like[0] === like[0]!.toUpperCase() && like[0] !== like[0]!.toLowerCase() ? synonym[0]!.toUpperCase() + synonym.slice(1) : synonym;
}

function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)]!;
}

/** `text` after one EDA operation changing about alpha × its words (at least one); the text itself when the
 *  operation finds nothing to do (no word, or no synonym in WordNet). */
export function edaText(text: string, operation: EdaOperation, alpha: number, random: () => number, wordnet: WordNet): string {
  const tokens = tokenize(text);
  const words = tokens.flatMap((token, index) => (token.word ? [index] : []));
  if (words.length === 0) return text;
  const changes = Math.max(1, Math.round(alpha * words.length));
  const withSynonyms = () => words.filter((i) => !STOP_WORDS.has(tokens[i]!.text.toLowerCase()) && wordnet.synonyms(tokens[i]!.text).length > 0);

  switch (operation) {
    case 'synonym_replacement': {
      const candidates = withSynonyms();
      for (let n = 0; n < changes && candidates.length > 0; n += 1) {
        const index = candidates.splice(Math.floor(random() * candidates.length), 1)[0]!;
        const token = tokens[index]!;
        token.text = matchCase(pick(wordnet.synonyms(token.text), random), token.text);
      }
      break;
    }
    case 'random_insertion': {
      const candidates = withSynonyms();
      if (candidates.length === 0) break;
      for (let n = 0; n < changes; n += 1) {
        const synonym = pick(wordnet.synonyms(tokens[pick(candidates, random)]!.text), random);
        // Before a random word, or after the last one; the separator is a space.
        const at = Math.floor(random() * (words.length + 1));
        const token = tokens[words[Math.min(at, words.length - 1)]!]!;
        token.text = at === words.length ? `${token.text} ${synonym}` : `${synonym} ${token.text}`;
      }
      break;
    }
    case 'random_swap': {
      if (words.length < 2) break;
      for (let n = 0; n < changes; n += 1) {
        const first = Math.floor(random() * words.length);
        const second = (first + 1 + Math.floor(random() * (words.length - 1))) % words.length;
        const a = tokens[words[first]!]!;
        const b = tokens[words[second]!]!;
        [a.text, b.text] = [b.text, a.text];
      }
      break;
    }
    case 'random_deletion': {
      if (words.length < 2) break;
      let deleted = words.filter(() => random() < alpha);
      if (deleted.length === 0) deleted = [pick(words, random)];
      if (deleted.length === words.length) deleted = deleted.filter((i) => i !== pick(words, random));
      for (const index of deleted) {
        tokens[index]!.text = '';
        // One space of those around the word goes with it: the one after, or else the one before ("clear days?").
        const next = tokens[index + 1];
        const previous = tokens[index - 1];
        if (next && !next.word && /^[ \t]/.test(next.text)) next.text = next.text.slice(1);
        else if (previous && !previous.word && /[ \t]$/.test(previous.text)) previous.text = previous.text.slice(0, -1);
      }
      break;
    }
  }
  return tokens.map((token) => token.text).join('');
}
