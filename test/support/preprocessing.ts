// Test support for the preprocessing service: a real app on a temp platform, multipart bodies, and
// every request checked against openapi/preprocessing.json.
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { buildPreprocessingApp } from '@ftp/preprocessing';
import { checkedInject } from '../contract/openapi-contract.ts';

export interface TestService {
  app: FastifyInstance;
  platform: TestPlatform;
  call(options: InjectOptions): Promise<LightMyRequestResponse>;
  upload(filename: string, content: string | Buffer, options?: UploadOptions): Promise<LightMyRequestResponse>;
  process(body: Record<string, unknown>, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface UploadOptions {
  fieldname?: string;
  headers?: Record<string, string>;
  /** Text fields sent with the file (e.g. delimiter), after it unless `fieldsFirst`. */
  fields?: Record<string, string>;
  fieldsFirst?: boolean;
}

export function multipartBody(
  filename: string,
  content: string | Buffer,
  fieldname = 'file',
  options: Pick<UploadOptions, 'fields' | 'fieldsFirst'> = {},
): { body: Buffer; contentType: string } {
  const boundary = `----ftp${Math.random().toString(16).slice(2)}`;
  const file = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${fieldname}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    Buffer.from(content),
    Buffer.from('\r\n'),
  ]);
  const fields = Object.entries(options.fields ?? {}).map(([name, value]) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
  );
  const parts = options.fieldsFirst ? [...fields, file] : [file, ...fields];
  return { body: Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]), contentType: `multipart/form-data; boundary=${boundary}` };
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
      const { body, contentType } = multipartBody(filename, content, options.fieldname, options);
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
