// Resource ids: a short prefix that says what the id names, then 24 random hex characters.
import { randomBytes } from 'node:crypto';

export type IdKind = 'ds' | 'pd' | 'job' | 'exp' | 'eval' | 'evalrun' | 'cmp' | 'req' | 'key' | 'wrk' | 'chatcmpl' | 'upload' | 'part' | 'batch' | 'batch_req' | 'cp' | 'evt' | 'whe' | 'whd' | 'tks' | 'sweep';

export function newId(kind: IdKind): string {
  return `${kind}_${randomBytes(12).toString('hex')}`;
}
