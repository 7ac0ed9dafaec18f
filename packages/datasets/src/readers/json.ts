// JSON rows: a top-level array of objects, or an object with exactly one array field of objects. stream-json's
// tokenizer runs over the text chunk by chunk and only one row is assembled at a time, so a 1 GB array is fine.
import { BadRequest } from '@ftp/platform';
import Assembler from 'stream-json/assembler.js';
import { jsonParser, type Token } from 'stream-json/parser.js';
import { jsonVerifier } from 'stream-json/utils/verifier.js';
import type { ByteSource } from './byte-source.ts';
import { lonelySurrogateAt, MAX_ROW_BYTES, type DatasetRow } from './rows.ts';
import { decodedText } from './text.ts';

// stream-chain's end-of-input marker, which flushes its stages. A registered symbol, so that it can be shared
// without importing stream-chain (not a dependency of ours).
const END_OF_INPUT = Symbol.for('object-stream.none');
type Stage = (chunk: string | symbol) => { values: Token[] } | symbol;

const EXPECTED = 'expected an array of row objects ([{"text": "..."}, ...]) or an object with one array field of them ({"data": [...]})';

function kindOf(token: Token): string {
  switch (token.name) {
    case 'startArray': return 'an array';
    case 'startObject': return 'an object';
    case 'stringValue': return 'a string';
    case 'numberValue': return 'a number';
    case 'trueValue':
    case 'falseValue': return 'a boolean';
    case 'nullValue': return 'null';
    default: return token.name;
  }
}

/** Walks the token stream: finds the array that holds the rows, assembles each row, refuses anything else. */
class RowWalker {
  rows = 0;
  private state: 'start' | 'topArray' | 'topObject' | 'fieldArray' | 'done' = 'start';
  private readonly row = new Assembler<DatasetRow>();
  private assembling = false;
  private skipDepth = 0; // inside a non-array value of the top-level object, which we pass over
  private key = '';
  private arrayField: string | undefined;

  feed(tokens: Token[], out: DatasetRow[]): void {
    for (const token of tokens) {
      if (this.assembling) {
        this.row.consume(token);
        if (this.row.done) {
          const surrogate = lonelySurrogateAt(this.row.current);
          if (surrogate !== undefined) throw new BadRequest(`Row ${this.rows + 1} of the JSON file: ${surrogate}.`);
          out.push(this.row.current!);
          this.rows++;
          this.assembling = false;
        }
      } else if (this.skipDepth > 0) {
        if (token.name === 'startObject' || token.name === 'startArray') this.skipDepth++;
        else if (token.name === 'endObject' || token.name === 'endArray') this.skipDepth--;
      } else {
        this.step(token);
      }
    }
  }

  private step(token: Token): void {
    switch (this.state) {
      case 'start':
        if (token.name === 'startArray') this.state = 'topArray';
        else if (token.name === 'startObject') this.state = 'topObject';
        else throw new BadRequest(`The JSON file holds ${kindOf(token)}, not rows; ${EXPECTED}.`);
        return;
      case 'topArray':
      case 'fieldArray':
        if (token.name === 'startObject') {
          this.assembling = true;
          this.row.consume(token);
        } else if (token.name === 'endArray') {
          if (this.rows === 0) {
            const where = this.state === 'topArray' ? 'The JSON array' : `The JSON field ${JSON.stringify(this.arrayField)}`;
            throw new BadRequest(`${where} is empty; the file has no rows.`);
          }
          this.state = this.state === 'topArray' ? 'done' : 'topObject';
        } else {
          const where = this.state === 'topArray' ? 'the top-level JSON array' : `the JSON field ${JSON.stringify(this.arrayField)}`;
          throw new BadRequest(
            `Row ${this.rows + 1} of ${where} is ${kindOf(token)}; every row must be an object such as {"text": "..."}.`,
          );
        }
        return;
      case 'topObject':
        if (token.name === 'keyValue') this.key = token.value;
        else if (token.name === 'startArray') {
          if (this.arrayField !== undefined) {
            throw new BadRequest(
              `The JSON object has more than one array field (${JSON.stringify(this.arrayField)} and ${JSON.stringify(this.key)}); ` +
                'keep only the one that holds the rows, or upload an array of row objects.',
            );
          }
          this.arrayField = this.key;
          this.state = 'fieldArray';
        } else if (token.name === 'startObject') this.skipDepth = 1;
        else if (token.name === 'endObject') {
          if (this.arrayField === undefined) throw new BadRequest(`The JSON object has no array field; ${EXPECTED}.`);
          this.state = 'done';
        }
        return;
      case 'done':
        return; // the tokenizer itself refuses anything after the top-level value
    }
  }
}

/** Re-reads the file with stream-json's verifier, which knows the line and column where the syntax breaks;
 *  the tokenizer does not. Only runs once a file has already failed. */
async function locateSyntaxError(source: ByteSource, fallback: string): Promise<BadRequest> {
  const verify = jsonVerifier() as unknown as Stage;
  try {
    for await (const text of decodedText(source, { legacy: false })) verify(text);
    verify(END_OF_INPUT);
  } catch (err) {
    const e = err as Error & { line?: number; pos?: number };
    if (typeof e.line === 'number') {
      const reason = e.message.replace(/^.*?: Verifier (cannot parse input: |has )?/, '');
      return new BadRequest(`The JSON is malformed at line ${e.line}, column ${e.pos}: ${reason}.`);
    }
  }
  return new BadRequest(`The JSON is malformed: ${fallback}.`);
}

/** Rows of a JSON file, one batch per chunk of input. */
export async function* readJsonBatches(source: ByteSource): AsyncGenerator<DatasetRow[]> {
  const tokenize = jsonParser({ streamValues: false }) as unknown as Stage;
  const walker = new RowWalker();
  let charsSinceRow = 0;
  const feed = (chunk: string | symbol): DatasetRow[] => {
    const rows: DatasetRow[] = [];
    let out: ReturnType<Stage>;
    try {
      out = tokenize(chunk);
    } catch (err) {
      throw new SyntaxError((err as Error).message.replace(/^Parser (cannot parse input: |has )?/, ''));
    }
    if (typeof out !== 'symbol') walker.feed(out.values, rows);
    return rows;
  };
  try {
    for await (const text of decodedText(source, { legacy: false })) {
      const rows = feed(text);
      charsSinceRow = rows.length > 0 ? 0 : charsSinceRow + text.length;
      if (charsSinceRow > MAX_ROW_BYTES) {
        throw new BadRequest(`JSON row ${walker.rows + 1} is larger than ${MAX_ROW_BYTES >> 20} MiB; rows must be smaller.`);
      }
      if (rows.length > 0) yield rows;
    }
    const last = feed(END_OF_INPUT);
    if (last.length > 0) yield last;
  } catch (err) {
    if (err instanceof SyntaxError) throw await locateSyntaxError(source, err.message);
    throw err;
  }
}
