// Where the console forwards each /api/<service>/…: the CONSOLE_<SERVICE>_URL variables when set (scaled out, each
// service on its own host), else that service's port on this host (the embedded default, or one machine).
import type { Config } from '@ftp/platform';
import type { ConsoleUpstream } from './app.ts';

type UpstreamConfig = Pick<
  Config,
  | 'HOST' | 'PREPROCESSING_PORT' | 'TRAINING_PORT' | 'EXPORT_PORT' | 'INFERENCE_PORT' | 'OPENAI_PORT' | 'TINKER_PORT'
  | 'CONSOLE_PREPROCESSING_URL' | 'CONSOLE_TRAINING_URL' | 'CONSOLE_EXPORT_URL' | 'CONSOLE_INFERENCE_URL' | 'CONSOLE_OPENAI_URL' | 'CONSOLE_TINKER_URL'
>;

export function consoleUpstreams(config: UpstreamConfig): Record<ConsoleUpstream, string> {
  // A wildcard listen address is not one to connect to; the loopback of the same family is.
  const host = config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST === '::' ? '[::1]' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  const local = (port: number) => `http://${host}:${port}`;
  return {
    preprocessing: config.CONSOLE_PREPROCESSING_URL ?? local(config.PREPROCESSING_PORT),
    training: config.CONSOLE_TRAINING_URL ?? local(config.TRAINING_PORT),
    export: config.CONSOLE_EXPORT_URL ?? local(config.EXPORT_PORT),
    inference: config.CONSOLE_INFERENCE_URL ?? local(config.INFERENCE_PORT),
    openai: config.CONSOLE_OPENAI_URL ?? local(config.OPENAI_PORT),
    tinker: config.CONSOLE_TINKER_URL ?? local(config.TINKER_PORT),
  };
}
