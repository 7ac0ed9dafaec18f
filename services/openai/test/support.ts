// Test support for the /v1 surface: a real app on a temp platform (no worker: what is checked is answered before any
// work is queued), and POST /v1/files as a client sends it.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { multipartBody } from '../../../test/support/preprocessing.ts';
import { buildOpenAiApp } from '../src/app.ts';

export interface OpenAiTestApp {
  app: FastifyInstance;
  platform: TestPlatform;
  close(): Promise<void>;
}

export async function openAiTestApp(modelsDir: string): Promise<OpenAiTestApp> {
  const platform = await openTestPlatform({ MODELS_DIR: modelsDir });
  const app = await buildOpenAiApp(platform);
  await app.ready();
  return {
    app,
    platform,
    async close() {
      await app.close();
      await platform.close();
    },
  };
}

/** POST /v1/files with purpose fine-tune, as the SDKs send it (purpose first). */
export function uploadFineTuneFile(app: FastifyInstance, name: string, content: string | Buffer): Promise<LightMyRequestResponse> {
  const { body, contentType } = multipartBody(name, content);
  const purpose = Buffer.from(`--${contentType.split('boundary=')[1]}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nfine-tune\r\n`);
  return app.inject({ method: 'POST', url: '/v1/files', payload: Buffer.concat([purpose, body]), headers: { 'content-type': contentType } });
}
