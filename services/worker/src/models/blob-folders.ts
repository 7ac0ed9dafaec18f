// Model folders between blob storage and this machine: what training stores (adapter, merged model, GGUF,
// checkpoints), what exports add, and the copies workers keep in their caches. Local folders are filled in a
// temp folder renamed into place, so a copy cut short never looks finished.
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Platform } from '@ftp/platform';

/** Every file under `folder`, as sorted slash-separated paths relative to it. */
export async function listFolderFiles(folder: string): Promise<string[]> {
  const entries = await fs.readdir(folder, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(folder, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

/** The bytes of every file under `folder`, together. */
export async function folderBytes(folder: string): Promise<number> {
  const sizes = await Promise.all((await listFolderFiles(folder)).map(async (rel) => (await fs.stat(path.join(folder, rel))).size));
  return sizes.reduce((a, b) => a + b, 0);
}

/** Uploads every file under `folder` to `prefix` (no trailing slash); returns the URI of the prefix as a folder. */
export async function uploadFolder(platform: Pick<Platform, 'blobs'>, folder: string, prefix: string): Promise<string> {
  for (const rel of await listFolderFiles(folder)) {
    await platform.blobs.put(`${prefix}/${rel}`, createReadStream(path.join(folder, ...rel.split('/'))));
  }
  return platform.blobs.uri(prefix);
}

/** Fills `folder` through `build` writing into a temp folder that is renamed into place once complete, so a
 *  build cut short (crash, cancel, failed step) never leaves a half-written folder that looks finished. */
export async function buildFolder(folder: string, build: (temp: string) => Promise<void>): Promise<void> {
  const temp = `${folder}.part-${process.pid}`;
  await fs.rm(temp, { recursive: true, force: true });
  try {
    await fs.mkdir(path.dirname(folder), { recursive: true });
    await build(temp);
    await fs.rm(folder, { recursive: true, force: true });
    await fs.rename(temp, folder);
  } finally {
    await fs.rm(temp, { recursive: true, force: true });
  }
}

/** Copies the blobs under `prefix` (all, or those whose path under it `keep` accepts) into `folder`; nothing
 *  to copy is an error. */
export async function downloadPrefix(platform: Pick<Platform, 'blobs'>, prefix: string, folder: string, keep: (path: string) => boolean = () => true): Promise<void> {
  const blobs = (await platform.blobs.list(prefix)).filter((b) => keep(b.key.slice(prefix.length)));
  // uri() takes a key, and a key has no trailing slash.
  if (blobs.length === 0) throw new Error(`nothing stored under ${platform.blobs.uri(prefix.replace(/\/$/, ''))}`);
  await buildFolder(folder, async (temp) => {
    for (const blob of blobs) {
      const file = path.join(temp, ...blob.key.slice(prefix.length).split('/'));
      await fs.mkdir(path.dirname(file), { recursive: true });
      await pipeline(await platform.blobs.get(blob.key), createWriteStream(file));
    }
  });
}
