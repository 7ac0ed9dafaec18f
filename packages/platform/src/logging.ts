// pino logger shared by every service. Secrets (hub_token, api keys, Authorization) are removed from
// every log object by key, at any depth, before serialisation: a log line can never carry them.
import pino, { type DestinationStream, type Logger } from 'pino';

/** Keys whose values never reach a log line, compared case-insensitively. */
const SECRET_KEYS = new Set([
  'authorization',
  'hub_token',
  'api_key',
  'llm_api_key',
  'token',
  'hf_token',
  'password',
  'secret',
  'cookie',
  'set-cookie',
  'x-api-key',
]);

export const REDACTED = '[redacted]';

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase());
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Returns a copy of `value` with every secret key's value replaced, in plain objects and arrays at any
 *  depth. Class instances (requests, replies, errors) are left to the serializers below, which pick
 *  only fields that cannot hold a secret; copying them here would strip their prototype getters. */
export function scrubSecrets(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => scrubSecrets(v, depth + 1));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = isSecretKey(key) ? REDACTED : scrubSecrets(v, depth + 1);
  }
  return out;
}

export interface LoggerOptions {
  level?: string;
  /** Where lines go; stdout by default. Tests pass a stream to read what was logged. */
  destination?: DestinationStream;
  name?: string;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name,
      formatters: { log: (obj) => scrubSecrets(obj) as Record<string, unknown> },
      serializers: {
        // Only these parts of a request are logged; never headers or bodies.
        req: (req: { method?: string; url?: string; id?: string }) => ({ method: req.method, url: req.url, id: req.id }),
        res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
        err: pino.stdSerializers.err,
      },
    },
    options.destination,
  );
}

export type { Logger };
