// Metadata rows: migrations apply once, and every read filters on the owning user.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newId, openEmbeddedDatabase } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await openTestPlatform();
});
afterEach(() => platform.close());

function processedRow(userId: string, id = newId('pd')) {
  return {
    processed_dataset_id: id, user_id: userId, dataset_id: 'ds_1', dataset_name: 'n', dataset_subset: 'default',
    dataset_source: 'upload' as const, processing_mode: 'language_modeling' as const, modality: 'text' as const,
    config: { a: 1 }, splits: [{ split_name: 'train', num_rows: 2, blob_key: 'k', samples: [] }], num_examples: 2,
    columns: ['q'], blob_prefix: `processed/${userId}/${id}/`,
  };
}

describe('DatasetsRepository', () => {
  it('stores and reads rows only for their owner, newest first', async () => {
    const a1 = await platform.datasets.insertProcessed(processedRow('alice'));
    await new Promise((r) => setTimeout(r, 5));
    const a2 = await platform.datasets.insertProcessed(processedRow('alice'));
    const b1 = await platform.datasets.insertProcessed(processedRow('bob'));
    expect((await platform.datasets.listProcessed('alice')).map((r) => r.processed_dataset_id)).toEqual([a2.processed_dataset_id, a1.processed_dataset_id]);
    expect(await platform.datasets.getProcessed('alice', b1.processed_dataset_id)).toBeUndefined();
    expect(await platform.datasets.deleteProcessed('alice', b1.processed_dataset_id)).toBe(false);
    expect(await platform.datasets.getProcessed('bob', b1.processed_dataset_id)).toMatchObject({ config: { a: 1 }, num_examples: 2 });
    expect(a1.created_at).toBeInstanceOf(Date);
  });

  it('re-opening the database applies no migration twice', async () => {
    await platform.db.close();
    const db = await openEmbeddedDatabase(`${platform.dataDir}/pglite`);
    const names = await db.query<{ name: string }>('SELECT name FROM schema_migrations');
    expect(new Set(names.map((n) => n.name)).size).toBe(names.length);
    await db.close();
    platform = await openTestPlatform();
  });
});

describe('embedded database ownership', () => {
  it('refuses a second owner of a folder whose owner is alive, takes over a dead owner\'s lock', async () => {
    const fs = await import('node:fs/promises');
    const lockFile = `${platform.dataDir}/pglite.lock`;
    expect(await fs.readFile(lockFile, 'utf8')).toBe(String(process.pid));
    await fs.writeFile(lockFile, '1'); // pid 1 is alive and is not us
    await expect(openEmbeddedDatabase(`${platform.dataDir}/pglite`)).rejects.toThrow(/in use by process 1; stop it first/);
    await fs.writeFile(lockFile, String(process.pid));

    const other = await openTestPlatform();
    const otherLock = `${other.dataDir}/pglite.lock`;
    await other.db.close(); // releases the lock
    await fs.writeFile(otherLock, '999999999'); // a lock left by a process that died
    const reopened = await openEmbeddedDatabase(`${other.dataDir}/pglite`);
    expect(await fs.readFile(otherLock, 'utf8')).toBe(String(process.pid));
    await reopened.close();
    await expect(fs.stat(otherLock)).rejects.toThrow();
    await fs.rm(other.dataDir, { recursive: true, force: true });
  });
});
