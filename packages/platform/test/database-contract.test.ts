// Contract of the metadata store: PGlite (embedded) and a real PostgreSQL server pass the same cases, with rows of
// the same JavaScript types, so the repositories cannot tell which driver they have. Then what only the server has:
// processes that start together, and a server that is not there or goes away.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ComparisonsRepository,
  DatasetsRepository,
  EvaluationRunsRepository,
  EvaluationsRepository,
  JobsRepository,
  WebhooksRepository,
  newId,
  openEmbeddedDatabase,
  openPostgresDatabase,
  ServiceUnavailable,
  WorkersRepository,
  type Database,
} from '@ftp/platform';
import { createDatabase } from '../../../test/servers/scaled-env.ts';
import { freePort } from '../../../test/servers/servers.ts';

// pg and PGlite read a `date` differently only away from UTC: run this file in a zone where a difference shows.
process.env.TZ = 'America/Sao_Paulo';

const MIGRATION_FILES = (await fs.readdir(fileURLToPath(new URL('../migrations/', import.meta.url)))).filter((f) => f.endsWith('.sql')).sort();

/** A fresh database on the shared test server, named for this file. */
async function freshPostgresUrl(): Promise<string> {
  return createDatabase(inject('servers').postgresUrl, `ftp_contract_${randomBytes(4).toString('hex')}`);
}

const drivers: Array<{ name: string; open(): Promise<{ db: Database; cleanUp(): Promise<void> }> }> = [
  {
    name: 'PGlite',
    async open() {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-db-contract-'));
      const db = await openEmbeddedDatabase(path.join(dir, 'pglite'));
      return { db, cleanUp: () => fs.rm(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'PostgreSQL',
    async open() {
      return { db: await openPostgresDatabase(await freshPostgresUrl()), cleanUp: async () => undefined };
    },
  },
];

describe.each(drivers)('metadata store contract: $name', (driver) => {
  let db: Database;
  let cleanUp: () => Promise<void>;
  beforeAll(async () => {
    ({ db, cleanUp } = await driver.open());
  });
  afterAll(async () => {
    await db?.close();
    await cleanUp?.();
  });

  it('records every migration file once', async () => {
    const rows = await db.query<{ name: string; applied_at: Date }>('SELECT name, applied_at FROM schema_migrations ORDER BY name');
    expect(rows.map((r) => r.name)).toEqual(MIGRATION_FILES);
    expect(rows.every((r) => r.applied_at instanceof Date)).toBe(true);
  });

  it('binds parameters, NULL and JavaScript arrays (= ANY($1))', async () => {
    expect(await db.query('SELECT $1::text AS a, $2::int AS b, $3::text IS NULL AS c', ['x', 2, null])).toEqual([{ a: 'x', b: 2, c: true }]);
    const picked = await db.query<{ v: string }>("SELECT v FROM unnest(ARRAY['a', 'b', 'c']) AS v WHERE v = ANY($1) ORDER BY v", [['c', 'a', 'z']]);
    expect(picked.map((r) => r.v)).toEqual(['a', 'c']);
  });

  it('returns every column type as the same JavaScript value', async () => {
    const [row] = await db.query(
      `SELECT 5000000000::bigint AS int8, 9007199254740993::bigint AS huge_int8, count(*) AS count, 7::int AS int4,
         1.5::float8 AS float8, 1.50::numeric AS numeric, true AS bool, '{"b":1,"a":[2]}'::json AS json,
         '{"k":null}'::jsonb AS jsonb, ARRAY['x','y'] AS texts, ARRAY[1,2]::bigint[] AS int8s,
         '2024-01-02'::date AS date, ARRAY['2024-01-02'::date] AS dates, '2024-01-02 03:04:05+02'::timestamptz AS ts,
         make_interval(secs => $1) AS interval, 'infinity'::timestamptz AS forever, NULL::int AS nothing
       FROM (VALUES (1), (2)) AS two`,
      [90],
    );
    expect(row).toEqual({
      int8: 5_000_000_000, huge_int8: 9007199254740993n, count: 2, int4: 7, float8: 1.5, numeric: '1.50', bool: true,
      json: { b: 1, a: [2] }, jsonb: { k: null }, texts: ['x', 'y'], int8s: [1, 2],
      date: new Date('2024-01-02T00:00:00Z'), dates: [new Date('2024-01-02T00:00:00Z')], ts: new Date('2024-01-02T01:04:05Z'),
      interval: '00:01:30', forever: Infinity, nothing: null,
    });
    expect(Object.keys(row!)).toEqual(['int8', 'huge_int8', 'count', 'int4', 'float8', 'numeric', 'bool', 'json', 'jsonb', 'texts', 'int8s', 'date', 'dates', 'ts', 'interval', 'forever', 'nothing']);
  });

  it('gives the repositories the same row objects', async () => {
    const user = `user-${randomBytes(4).toString('hex')}`;
    const datasets = new DatasetsRepository(db);
    const raw = {
      dataset_id: newId('ds'), user_id: user, filename: 'big.jsonl', format: 'jsonl', blob_key: `raw/${user}/big.jsonl`,
      size_bytes: 6_000_000_000, num_examples: 3, columns: ['prompt', 'completion'], sample: [{ prompt: 'p', completion: 'c' }],
      delimiter: null, warnings: ['one column whose rows hold a ";"'],
    };
    const inserted = await datasets.insertRaw(raw);
    expect(inserted).toEqual({ ...raw, purpose: 'fine-tune', created_at: expect.any(Date) });
    expect(await datasets.getRaw(user, raw.dataset_id)).toEqual(inserted);

    const jobs = new JobsRepository(db, new WebhooksRepository(db, false));
    const job = await jobs.insert({
      job_id: newId('job'), user_id: user, job_name: 'j', processed_dataset_id: 'pd_1', base_model_id: 'tiny',
      modality: 'text', training_config: { epochs: 2, lr: 0.0002 }, blob_prefix: `jobs/${user}/`, tracker_url: null,
    });
    expect(job).toMatchObject({ status: 'queued', progress: null, metrics: null, cancel_requested: false, started_at: null, artifacts: { file: {}, raw: {}, hub: {} } });
    const startedAt = new Date('2025-03-04T05:06:07.089Z');
    const progress = { step: 3, total_steps: 10, epoch: 0.5, loss: 1.25, eta_seconds: null };
    const updated = await jobs.update(job.job_id, { status: 'training', progress, started_at: startedAt }, ['queued']);
    expect(updated).toEqual({ ...job, status: 'training', progress, started_at: startedAt, updated_at: expect.any(Date) });
    expect((await jobs.listByStatus(['training', 'preparing'])).map((j) => j.job_id)).toContain(job.job_id);
    const events = await jobs.events(job.job_id);
    expect(events.map((e) => [e.seq, e.kind, e.data])).toEqual([[1, 'status', { status: 'queued' }], [2, 'status', { status: 'training' }]]);
    expect(events[0]!.created_at).toBeInstanceOf(Date);

    const evaluations = new EvaluationsRepository(db, new WebhooksRepository(db, false));
    const evaluation = {
      evaluation_id: newId('eval'), user_id: user, processed_dataset_id: 'pd_1', split: 'test', job_id: job.job_id,
      model_source: 'adapter' as const, base_model_id: 'tiny', use_fast_engine: false, request: { max_samples: 2 },
      metrics: { accuracy: 0.5 }, num_samples: 2, samples: [{ output: 'x' }], warnings: [], elapsed_seconds: 1.234,
    };
    expect(await evaluations.insert(evaluation)).toEqual({ ...evaluation, created_at: expect.any(Date) });
  });

  it('keeps comparisons as written, a page at a time, and deletes them with a job of either side or their dataset', async () => {
    const user = `user-${randomBytes(4).toString('hex')}`;
    const comparisons = new ComparisonsRepository(db);
    const insert = (jobA: string | null, jobB: string | null, dataset = 'pd_1') => comparisons.insert({
      comparison_id: newId('cmp'), user_id: user, processed_dataset_id: dataset, job_a: jobA, job_b: jobB,
      request: { judge: { model: 'j' } }, result: { pairs: 2, counts: { win: 1, tie: 1, loss: 0 } }, elapsed_seconds: 1.5,
    });
    const first = await insert('job_a', null);
    expect(first).toMatchObject({ job_a: 'job_a', job_b: null, request: { judge: { model: 'j' } }, result: { pairs: 2 }, elapsed_seconds: 1.5, created_at: expect.any(Date) });
    const second = await insert(null, 'job_a');
    const third = await insert('job_b', null, 'pd_2');
    // Newest first (the database's microseconds, then the id), two pages that make the whole list.
    const all = (await comparisons.listPage(user, { limit: 10 })).rows;
    expect(all.map((r) => r.created_at.getTime())).toEqual(all.map((r) => r.created_at.getTime()).sort((x, y) => y - x));
    const page = await comparisons.listPage(user, { limit: 2 });
    const rest = await comparisons.listPage(user, { limit: 2, after: page.rows[1]!.comparison_id });
    expect([page.hasMore, rest.hasMore]).toEqual([true, false]);
    expect([...page.rows, ...rest.rows].map((r) => r.comparison_id)).toEqual(all.map((r) => r.comparison_id));
    expect(await comparisons.get('someone-else', first.comparison_id)).toBeUndefined();
    expect((await comparisons.deleteFor(user, { jobId: 'job_a' })).sort()).toEqual([first.comparison_id, second.comparison_id].sort());
    expect(await comparisons.deleteFor(user, { processedDatasetId: 'pd_2' })).toEqual([third.comparison_id]);
    expect(await comparisons.delete(user, third.comparison_id)).toBe(false);
  });

  it('moves an evaluation with benchmarks through its states under guards, its log beside it, a page at a time', async () => {
    const user = `user-${randomBytes(4).toString('hex')}`;
    const runs = new EvaluationRunsRepository(db, new WebhooksRepository(db, false));
    const insert = () => runs.insert({
      evaluation_id: newId('evalrun'), user_id: user, job_id: null, model_source: 'base', checkpoint_step: null, base_model_id: 'tiny',
      request: { model_source: 'base', base_model_id: 'tiny', benchmarks: { tasks: ['hellaswag'] } },
    });
    const first = await insert();
    expect(first).toMatchObject({ status: 'queued', attempts: 0, results: null, worker_id: null, started_at: null, request: { benchmarks: { tasks: ['hellaswag'] } } });
    const claimed = await runs.claim(first.evaluation_id, 'wrk_a');
    expect(claimed).toMatchObject({ status: 'running', worker_id: 'wrk_a', attempts: 1, started_at: expect.any(Date) });
    expect(await runs.claim(first.evaluation_id, 'wrk_b')).toBeUndefined();
    expect(await runs.update(first.evaluation_id, { status: 'completed' }, 'wrk_b')).toBeUndefined();
    const results = { lm_eval: { results: { hellaswag: { acc: { value: 0.25, stderr: 0.01, filter: 'none' } } } } };
    expect(await runs.update(first.evaluation_id, { status: 'completed', results, finished_at: new Date() }, 'wrk_a')).toMatchObject({ status: 'completed', results });
    expect(await runs.cancel(user, first.evaluation_id)).toBeUndefined();
    const second = await insert();
    expect(await runs.cancel('someone-else', second.evaluation_id)).toBeUndefined();
    expect(await runs.cancel(user, second.evaluation_id)).toMatchObject({ status: 'cancelled', finished_at: expect.any(Date) });
    expect((await runs.events(first.evaluation_id)).map((e) => [e.seq, e.kind, e.data])).toEqual([[1, 'status', { status: 'queued' }], [2, 'status', { status: 'running' }], [3, 'status', { status: 'completed' }]]);
    const page = await runs.listPage(user, { limit: 1 });
    expect([page.rows.map((r) => r.evaluation_id), page.hasMore]).toEqual([[second.evaluation_id], true]);
    const next = await runs.listPage(user, { limit: 1, after: second.evaluation_id });
    expect([next.rows.map((r) => r.evaluation_id), next.hasMore]).toEqual([[first.evaluation_id], false]);
    expect(await runs.delete(user, first.evaluation_id)).toBe(true);
    expect(await runs.events(first.evaluation_id)).toEqual([]);
  });

  it('numbers the events of one job in order when several writers add them at once', async () => {
    const jobs = new JobsRepository(db, new WebhooksRepository(db, false));
    const job = await jobs.insert({
      job_id: newId('job'), user_id: 'u', job_name: 'j', processed_dataset_id: 'pd_1', base_model_id: 'tiny',
      modality: 'text', training_config: {}, blob_prefix: 'jobs/u/', tracker_url: null,
    });
    await Promise.all(Array.from({ length: 40 }, (_, i) => jobs.appendEvent(job.job_id, 'log', { level: 'info', message: `m${i}` })));
    const events = await jobs.events(job.job_id);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    expect(new Set(events.slice(1).map((e) => e.data.message)).size).toBe(40);
  });

  it('keeps speed measurements per host and device: a job replaces a probe, a probe never replaces a job', async () => {
    const workers = new WorkersRepository(db);
    const key = { base_model_id: `m-${randomBytes(4).toString('hex')}`, method: 'LoRA', trainer_type: 'sft' };
    const at = (host: string, tokens_per_second: number, measured_by: 'probe' | 'job') => ({ host, device: 'cpu:X × 2', ...key, tokens_per_second, measured_by });
    await workers.recordThroughput(at('a', 100.5, 'probe'));
    await workers.recordThroughput(at('b', 50, 'probe'));
    await workers.recordThroughput({ ...at('a', 120, 'job'), overhead_seconds: 31.5 });
    await workers.recordThroughput(at('a', 999, 'probe'));
    const rows = await workers.throughput(key);
    expect(rows.map((r) => [r.host, r.tokens_per_second, r.measured_by, r.overhead_seconds])).toEqual([['a', 120, 'job', 31.5], ['b', 50, 'probe', null]]);
    expect(rows[0]!.measured_at).toBeInstanceOf(Date);
    expect(await workers.throughput({ ...key, method: 'Full' })).toEqual([]);
    // After completed, what preparing the model for chat took is kept beside the job's speed (#39); a probe keeps it.
    expect(rows.map((r) => r.chat_ready_seconds)).toEqual([null, null]);
    await workers.recordChatReady({ host: 'a', device: 'cpu:X × 2', ...key, chat_ready_seconds: 12.25 });
    await workers.recordChatReady({ host: 'nowhere', device: 'cpu:X × 2', ...key, chat_ready_seconds: 3 });
    await workers.recordThroughput(at('a', 999, 'probe'));
    expect((await workers.throughput(key)).map((r) => [r.host, r.chat_ready_seconds])).toEqual([['a', 12.25], ['b', null]]);
  });

  it('commits a transaction that resolves and rolls back one that throws', async () => {
    const owner = randomBytes(6).toString('hex');
    const insert = 'INSERT INTO secrets (owner_id, sealed, expires_at) VALUES ($1, $2, now())';
    const count = async (id: string) => (await db.query<{ n: number }>('SELECT count(*) AS n FROM secrets WHERE owner_id = $1', [id]))[0]!.n;

    expect(await db.transaction(async (tx) => {
      await tx.query(insert, [`${owner}-kept`, 's']);
      return (await tx.query<{ n: number }>('SELECT count(*) AS n FROM secrets WHERE owner_id = $1', [`${owner}-kept`]))[0]!.n;
    })).toBe(1);
    expect(await count(`${owner}-kept`)).toBe(1);

    await expect(db.transaction(async (tx) => {
      await tx.query(insert, [`${owner}-dropped`, 's']);
      throw new Error('changed my mind');
    })).rejects.toThrow('changed my mind');
    expect(await count(`${owner}-dropped`)).toBe(0);

    // A failing statement rolls back what came before it and surfaces as the SQL error it is.
    await expect(db.transaction(async (tx) => {
      await tx.query(insert, [`${owner}-dup`, 's']);
      await tx.query(insert, [`${owner}-dup`, 's']);
    })).rejects.toMatchObject({ code: '23505' });
    expect(await count(`${owner}-dup`)).toBe(0);
    const duplicate = await db.query(insert, [`${owner}-kept`, 's']).catch((err: unknown) => err);
    expect(duplicate).toMatchObject({ code: '23505' });
    expect(duplicate).not.toBeInstanceOf(ServiceUnavailable);
    await db.check();
  });
});

/** A TCP relay to the PostgreSQL server that can be cut: the server "goes away" for clients connected through it. */
async function startRelay(target: URL): Promise<{ url: string; cut(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((client) => {
    const server = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(server).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((relay.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    async cut() {
      const closed = new Promise((resolve) => relay.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

describe('PostgreSQL driver', () => {
  it('applies each migration once when several processes open a new database together', async () => {
    const url = await freshPostgresUrl();
    const dbs = await Promise.all(Array.from({ length: 4 }, () => openPostgresDatabase(url, { poolSize: 2 })));
    try {
      const rows = await dbs[0]!.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
      expect(rows.map((r) => r.name)).toEqual(MIGRATION_FILES);
      const again = await openPostgresDatabase(url);
      expect(await again.query('SELECT name FROM schema_migrations')).toHaveLength(MIGRATION_FILES.length);
      await again.close();
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });

  it('reports a server that is not there as the database unavailable, without the password', async () => {
    const port = await freePort();
    const opening = openPostgresDatabase(`postgres://ftp:Sup3r-Secret@127.0.0.1:${port}/ftp`);
    await expect(opening).rejects.toBeInstanceOf(ServiceUnavailable);
    const err = (await opening.catch((e: unknown) => e)) as ServiceUnavailable;
    expect(err).toMatchObject({ dependency: 'database', statusCode: 503 });
    expect(err.message).toMatch(new RegExp(`^the database at 127\\.0\\.0\\.1:${port} is unreachable: .*ECONNREFUSED`));
    expect(JSON.stringify({ ...err, message: err.message, stack: err.stack })).not.toContain('Sup3r-Secret');
  });

  it('reports a refused login or a missing database as the database unavailable', async () => {
    const server = new URL(inject('servers').postgresUrl);
    const stranger = new URL(server);
    stranger.username = 'nobody';
    stranger.password = 'Sup3r-Secret';
    await expect(openPostgresDatabase(stranger.toString())).rejects.toThrow(/^the database at 127\.0\.0\.1:\d+ is unreachable: role "nobody" does not exist$/);
    const missing = new URL(server);
    missing.pathname = '/ftp_no_such_database';
    await expect(openPostgresDatabase(missing.toString())).rejects.toMatchObject({ dependency: 'database', message: expect.stringMatching(/database "ftp_no_such_database" does not exist/) });
  });

  it('turns a server that goes away into ServiceUnavailable, on queries, transactions and checks', async () => {
    const relay = await startRelay(new URL(await freshPostgresUrl()));
    const db = await openPostgresDatabase(relay.url);
    try {
      expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      await relay.cut();
      await expect(db.query('SELECT 1')).rejects.toMatchObject({ dependency: 'database', message: expect.stringMatching(/^the database at 127\.0\.0\.1:\d+ is unreachable: /) });
      await expect(db.transaction(async (tx) => tx.query('SELECT 1'))).rejects.toBeInstanceOf(ServiceUnavailable);
      await expect(db.check()).rejects.toBeInstanceOf(ServiceUnavailable);
    } finally {
      await db.close();
    }
  });
});
