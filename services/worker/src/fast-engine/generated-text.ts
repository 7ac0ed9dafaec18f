// The text of one generation as its tokens come: decoded as they settle (a character split across tokens waits for
// its last byte), cut before the first stop string, and streamed without the tail that may still become a stop
// string (or, when the end is trimmed, trailing whitespace), so the pieces streamed add up to the final text.
import type { LlamaModel, Token } from 'node-llama-cpp';

export interface TextEnding {
  /** The text ends before the first of these (the request's stop strings and its grammar's stop triggers). */
  stops: readonly string[];
  /** Trailing whitespace is not part of the text (what node-llama-cpp's JSON grammars ask for). */
  trimEnd: boolean;
}

/** Tokens of context node-llama-cpp's detokenize uses to continue a text (its maxRecentDetokenizerTokens is 3). */
const CONTEXT_TOKENS = 8;

export class GeneratedText {
  private text = '';
  /** Tokens whose text is in `text`. */
  private decoded = 0;
  /** Characters of `text` handed to onText. */
  private shown = 0;
  private stopped = false;

  constructor(
    private readonly model: LlamaModel,
    private readonly ending: TextEnding,
    private readonly onText?: (delta: string) => void,
  ) {}

  /** Takes the tokens generated so far (one more each call); true when a stop string appeared: the end. */
  add(tokens: readonly Token[]): boolean {
    if (this.ending.stops.length === 0 && !this.onText) return false; // nothing to watch: decoded once at the end
    const piece = this.decode(tokens);
    if (piece.endsWith('\uFFFD')) return false; // a character whose last bytes are in the next token
    const searchFrom = this.text.length;
    this.text += piece;
    this.decoded = tokens.length;
    const at = firstStop(this.text, this.ending.stops, searchFrom);
    if (at >= 0) {
      this.text = this.text.slice(0, at);
      this.stopped = true;
      return true;
    }
    this.show(this.settledLength());
    return false;
  }

  /** The final text of `tokens`: the rest decoded (a character left incomplete as U+FFFD) and shown. */
  finish(tokens: readonly Token[]): string {
    if (!this.stopped) this.text += this.decode(tokens);
    if (this.ending.trimEnd) this.text = this.text.trimEnd();
    this.show(this.text.length);
    return this.text;
  }

  private decode(tokens: readonly Token[]): string {
    return this.model.detokenize(tokens.slice(this.decoded), false, tokens.slice(Math.max(0, this.decoded - CONTEXT_TOKENS), this.decoded));
  }

  /** How much of the text is sure to stay: all but an end that may become a stop string and, when the end is
   *  trimmed, the whitespace before it. */
  private settledLength(): number {
    const end = this.text.length - heldForStops(this.text, this.ending.stops);
    return this.ending.trimEnd ? this.text.slice(0, end).trimEnd().length : end;
  }

  private show(upTo: number): void {
    if (upTo <= this.shown) return;
    const delta = this.text.slice(this.shown, upTo);
    this.shown = upTo;
    this.onText?.(delta);
  }
}

/** Where the earliest stop string starts in `text`, looking only at matches that end at or after `from`; -1: none. */
export function firstStop(text: string, stops: readonly string[], from = 0): number {
  let first = -1;
  for (const stop of stops) {
    const at = text.indexOf(stop, Math.max(0, from - stop.length + 1));
    if (at >= 0 && (first < 0 || at < first)) first = at;
  }
  return first;
}

/** The length of the longest end of `text` that is the start of a stop string (it may complete with the next token). */
export function heldForStops(text: string, stops: readonly string[]): number {
  let held = 0;
  for (const stop of stops) {
    for (let length = Math.min(stop.length - 1, text.length); length > held; length--) {
      if (text.endsWith(stop.slice(0, length))) {
        held = length;
        break;
      }
    }
  }
  return held;
}
