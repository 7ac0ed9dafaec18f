// Model folders into blob storage: what training stores (adapter, merged model, GGUF) and what exports add.
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Platform } from '@ftp/platform';

/** Every file under `folder`, as sorted slash-separated paths relative to it. */
export async function listFolderFiles(folder: string): Promise<string[]> {
  const entries = await fs.readdir(folder, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(folder, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

/** Uploads every file under `folder` to `prefix` (no trailing slash); returns the URI of the prefix as a folder. */
export async function uploadFolder(platform: Platform, folder: string, prefix: string): Promise<string> {
  for (const rel of await listFolderFiles(folder)) {
    await platform.blobs.put(`${prefix}/${rel}`, createReadStream(path.join(folder, ...rel.split('/'))));
  }
  return platform.blobs.uri(prefix);
}
