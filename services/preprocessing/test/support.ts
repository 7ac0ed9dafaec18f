// Test support for the preprocessing service: a real app on a temp platform, multipart bodies, and
// every request checked against openapi/preprocessing.json.
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { checkedInject } from '../../../test/contract/openapi-contract.ts';
import { buildPreprocessingApp } from '../src/app.ts';

export interface TestService {
  app: FastifyInstance;
  platform: TestPlatform;
  call(options: InjectOptions): Promise<LightMyRequestResponse>;
  upload(filename: string, content: string | Buffer, options?: { fieldname?: string; headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
  process(body: Record<string, unknown>, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export function multipartBody(filename: string, content: string | Buffer, fieldname = 'file'): { body: Buffer; contentType: string } {
  const boundary = `----ftp${Math.random().toString(16).slice(2)}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${fieldname}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { body: Buffer.concat([head, Buffer.from(content), tail]), contentType: `multipart/form-data; boundary=${boundary}` };
}

export async function startService(env: Record<string, string> = {}): Promise<TestService> {
  const platform = await openTestPlatform(env);
  const app = await buildPreprocessingApp(platform);
  await app.ready();
  const call = (options: InjectOptions) => checkedInject('preprocessing', app, options);
  return {
    app,
    platform,
    call,
    upload(filename, content, options = {}) {
      const { body, contentType } = multipartBody(filename, content, options.fieldname);
      return call({ method: 'POST', url: '/datasets/upload', payload: body, headers: { 'content-type': contentType, ...options.headers } });
    },
    process(body, headers = {}) {
      return call({ method: 'POST', url: '/datasets/process', payload: body, headers });
    },
    async close() {
      await app.close();
      await platform.close();
    },
  };
}

/** Reads a processed split's JSONL back from blob storage. */
export async function readSplit(platform: TestPlatform, uri: string): Promise<Record<string, unknown>[]> {
  const key = platform.blobs.keyFromUri(uri);
  if (!key) throw new Error(`not a blob URI of this store: ${uri}`);
  const chunks: Buffer[] = [];
  for await (const chunk of await platform.blobs.get(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}

export const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

export function csv(rows: string[][]): string {
  return rows.map((r) => r.map((c) => (/[",\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(',')).join('\n') + '\n';
}
