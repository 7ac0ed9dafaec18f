// Where the services are, which API key to send and the model hub's token: command-line flags, then the environment,
// then $XDG_CONFIG_HOME/ftune/config.json (~/.config/ftune/config.json), then the embedded stack's loopback ports.
// The hub token has no flag, so it stays out of shell history and process lists.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from './errors.ts';

export const SERVICES = ['preprocessing', 'training', 'export', 'inference', 'openai'] as const;
export type Service = (typeof SERVICES)[number];

export const DEFAULT_URLS: Record<Service, string> = {
  preprocessing: 'http://127.0.0.1:8001',
  training: 'http://127.0.0.1:8002',
  export: 'http://127.0.0.1:8003',
  inference: 'http://127.0.0.1:8004',
  openai: 'http://127.0.0.1:8000',
};

/** A setting the command line reads: a service's URL, the API key, the hub token. */
export type SettingName = Service | 'apiKey' | 'hubToken';

/** The environment variable (and config-file key) of each setting. */
export const ENV_NAMES: Record<SettingName, string> = {
  preprocessing: 'FTUNE_PREPROCESSING_URL',
  training: 'FTUNE_TRAINING_URL',
  export: 'FTUNE_EXPORT_URL',
  inference: 'FTUNE_INFERENCE_URL',
  openai: 'FTUNE_OPENAI_URL',
  apiKey: 'FTUNE_API_KEY',
  hubToken: 'FTUNE_HUB_TOKEN',
};

/** The command-line flag of each setting. */
export const FLAG_NAMES: Record<Service | 'apiKey', string> = {
  preprocessing: '--preprocessing-url',
  training: '--training-url',
  export: '--export-url',
  inference: '--inference-url',
  openai: '--openai-url',
  apiKey: '--api-key',
};

export interface GlobalFlags {
  preprocessingUrl?: string;
  trainingUrl?: string;
  exportUrl?: string;
  inferenceUrl?: string;
  openaiUrl?: string;
  apiKey?: string;
}

export interface Settings {
  urls: Record<Service, string>;
  apiKey: string | undefined;
  /** The model hub's token, for exports to the hub and gated base models; never printed. */
  hubToken: string | undefined;
  /** The config file that was read (or would have been). */
  configFile: string;
}

export function configFilePath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(base, 'ftune', 'config.json');
}

/** The config file's settings: keys as the environment names them (FTUNE_TRAINING_URL) or in short form
 *  (training_url, api_key). A missing file is no settings; an unreadable one is an error that names it. */
function readConfigFile(file: string): Partial<Record<SettingName, string>> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new UsageError(`${file} must hold a JSON object`);
  const record = data as Record<string, unknown>;
  const out: Partial<Record<SettingName, string>> = {};
  for (const key of [...SERVICES, 'apiKey', 'hubToken'] as const) {
    const envName = ENV_NAMES[key];
    const shortName = envName.replace(/^FTUNE_/, '').toLowerCase();
    const value = record[envName] ?? record[shortName];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') throw new UsageError(`${file}: ${envName} must be a string`);
    out[key] = value;
  }
  return out;
}

const FLAG_KEYS: Record<Service | 'apiKey', keyof GlobalFlags> = {
  preprocessing: 'preprocessingUrl',
  training: 'trainingUrl',
  export: 'exportUrl',
  inference: 'inferenceUrl',
  openai: 'openaiUrl',
  apiKey: 'apiKey',
};

export function resolveSettings(flags: GlobalFlags, env: NodeJS.ProcessEnv = process.env): Settings {
  const configFile = configFilePath(env);
  const file = readConfigFile(configFile);
  const pick = (key: SettingName): string | undefined => {
    const candidates = [key === 'hubToken' ? undefined : flags[FLAG_KEYS[key]], env[ENV_NAMES[key]], file[key]];
    return candidates.find((v) => v !== undefined && v !== '');
  };
  const urls = Object.fromEntries(SERVICES.map((s) => [s, (pick(s) ?? DEFAULT_URLS[s]).replace(/\/+$/, '')])) as Record<Service, string>;
  return { urls, apiKey: pick('apiKey'), hubToken: pick('hubToken'), configFile };
}

/** A service's base URL, checked (http or https) when a command first uses it. */
export function serviceUrl(settings: Settings, service: Service): string {
  const url = settings.urls[service];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`the ${service} URL ${JSON.stringify(url)} is not a URL; set ${ENV_NAMES[service]} (or ${FLAG_NAMES[service]}) to e.g. ${DEFAULT_URLS[service]}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`the ${service} URL ${JSON.stringify(url)} must start with http:// or https://; set ${ENV_NAMES[service]} (or ${FLAG_NAMES[service]})`);
  }
  return url;
}
