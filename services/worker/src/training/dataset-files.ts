// A vision dataset's images next to its downloaded splits: the records name images by the blob URIs of this
// deployment (file://… or s3://…), which the ML core cannot read on another machine, so each distinct image is
// copied into one folder and the record's image parts are rewritten to the local path.
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { BlobNotFound, UnprocessableEntity, type BlobStore } from '@ftp/platform';

interface ImagePart {
  type: 'image';
  image: string;
}

const isImagePart = (value: unknown): value is ImagePart =>
  typeof value === 'object' && value !== null && (value as ImagePart).type === 'image' && typeof (value as ImagePart).image === 'string';

/** Every image part anywhere in a record (messages, prompt, chosen, rejected). */
function imageParts(value: unknown, found: ImagePart[] = []): ImagePart[] {
  if (isImagePart(value)) found.push(value);
  else if (Array.isArray(value)) for (const item of value) imageParts(item, found);
  else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) imageParts(item, found);
  return found;
}

/**
 * Copies the images of the split files into `imagesDir` and rewrites each split in place so that its image parts
 * hold local paths. URIs that are not of this blob store are left as they are (the core reports them by record).
 * Returns the number of images copied.
 */
export async function localizeImages(blobs: BlobStore, splitFiles: Record<string, string>, imagesDir: string): Promise<number> {
  const copied = new Map<string, string>(); // blob key → local file
  for (const [split, file] of Object.entries(splitFiles)) {
    const lines = (await fs.readFile(file, 'utf8')).split('\n');
    let changed = false;
    for (const [index, line] of lines.entries()) {
      if (!line.trim()) continue;
      const record: unknown = JSON.parse(line);
      const parts = imageParts(record);
      for (const part of parts) {
        const key = blobs.keyFromUri(part.image);
        if (key === undefined) continue;
        let local = copied.get(key);
        if (local === undefined) {
          local = path.join(imagesDir, `${copied.size}-${path.posix.basename(key)}`);
          await copyBlob(blobs, key, local, `${split} split record ${index + 1}`, part.image);
          copied.set(key, local);
        }
        part.image = local;
      }
      if (parts.length > 0) {
        lines[index] = JSON.stringify(record);
        changed = true;
      }
    }
    if (changed) await fs.writeFile(file, lines.join('\n'));
  }
  return copied.size;
}

async function copyBlob(blobs: BlobStore, key: string, file: string, where: string, uri: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  try {
    await pipeline(await blobs.get(key), createWriteStream(file));
  } catch (err) {
    if (!(err instanceof BlobNotFound)) throw err;
    throw new UnprocessableEntity({
      loc: ['body', 'processed_dataset_id'],
      msg: `${where}: image ${uri} is no longer in storage; process the dataset again`,
      type: 'missing_image',
    });
  }
}
