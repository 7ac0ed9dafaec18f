// pino logger shared by every service. Secrets (hub_token, api keys, Authorization) are removed from
// every log object by key, at any depth, before serialisation: a log line can never carry them.
// Lines are JSON (one object each, for log collectors) unless a person reads them: on a terminal they go through
// pino-pretty, after serialisation, so the pretty text is made from the same scrubbed object.
import pino, { type DestinationStream, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';

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

/** LOG_FORMAT: `json`, `pretty`, or `auto`: pretty when stdout is a terminal, JSON otherwise. */
export type LogFormat = 'auto' | 'json' | 'pretty';

export interface LoggerOptions {
  level?: string;
  /** Where lines go; stdout by default. Tests pass a stream to read what was logged. */
  destination?: DestinationStream;
  name?: string;
  /** How lines look (LOG_FORMAT); by default `auto` on stdout, JSON into a given destination. */
  format?: LogFormat;
}

/** The stream lines go to: through pino-pretty (synchronous, so lines keep their order with the rest of a terminal's
 *  output) when asked for or when a person reads stdout; otherwise the destination (undefined: stdout) as JSON. */
function logStream(options: LoggerOptions): DestinationStream | undefined {
  const format = options.format ?? (options.destination ? 'json' : 'auto');
  const pretty = format === 'pretty' || (format === 'auto' && !options.destination && process.stdout.isTTY === true);
  if (!pretty) return options.destination;
  return pinoPretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', ...(options.destination ? { destination: options.destination } : {}) });
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
    logStream(options),
  );
}

export type { Logger };
