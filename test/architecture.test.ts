// Arrows go down only (DESIGN.md): services → packages (jobs, platform, schema); no HTTP service imports another
// service, the worker, the ML core's client or llama.cpp (HTTP processes hold no model), the worker imports no
// service, and packages import no service or worker; among the packages, schema → platform → jobs → datasets, each
// importing only those before it (schema none of ours). Checked on the source imports of every production file
// and on the workspace dependency graph (package.json `dependencies`, followed transitively). Inside the jobs
// package, its folders (training, evaluations, models, openai, runtime over queues) reach each other only through a lower
// folder's index.ts, and everything outside it only through its package.json subpaths.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const HTTP_SERVICES = ['preprocessing', 'training', 'export', 'inference', 'openai', 'console'] as const;
const SERVICE_PACKAGES = [...HTTP_SERVICES.map((s) => `@ftp/${s}`), '@ftp/stack'];
const MODEL_HOLDERS = ['@ftp/worker', '@ftp/core-client', 'node-llama-cpp'];
/** The packages below the services, in order: each may import only those before it (schema: none of ours). */
const PACKAGE_ORDER = ['@ftp/schema', '@ftp/platform', '@ftp/jobs', '@ftp/datasets'] as const;
/** The jobs package's folders, each with the folders it may import (through their index.ts): only folders listed
 *  before it, so there is no cycle between them. */
const JOBS_FOLDERS: Readonly<Record<string, readonly string[]>> = {
  queues: [],
  models: ['queues'],
  runtime: ['queues'],
  openai: ['queues', 'models'],
  training: ['queues', 'models', 'runtime'],
  evaluations: ['queues', 'models'],
  tinker: ['queues', 'training'],
};
const JOBS = path.join(ROOT, 'packages', 'jobs');
const JOBS_SRC = path.join(JOBS, 'src');
/** Files outside the jobs package that may reach into its source by a relative path, and why. */
const JOBS_FILES_SHARED: Readonly<Record<string, string>> = {
  // bundled into the browser, which does not load the package (the console's test below checks it imports nothing)
  'services/console/web/src/components/format.ts → packages/jobs/src/training/readable.ts': 'the console bundles it',
  // the console does not depend on @ftp/jobs; its presets are checked against the settings a job applies
  'services/console/test/presets.test.ts → packages/jobs/src/training/applied-config.ts': 'a test of the console’s presets',
};

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
}

async function manifests(): Promise<Map<string, { dir: string; manifest: Manifest }>> {
  const found = new Map<string, { dir: string; manifest: Manifest }>();
  for (const group of ['packages', 'services']) {
    for (const name of await fs.readdir(path.join(ROOT, group))) {
      const dir = path.join(ROOT, group, name);
      const manifest = JSON.parse(await fs.readFile(path.join(dir, 'package.json'), 'utf8').catch(() => 'null')) as Manifest | null;
      if (manifest) found.set(manifest.name, { dir, manifest });
    }
  }
  return found;
}

/** Every package `name` depends on at run time, through workspace packages, `name` excluded. */
function runtimeClosure(all: Map<string, { manifest: Manifest }>, name: string): Set<string> {
  const seen = new Set<string>();
  const visit = (pkg: string) => {
    for (const dep of Object.keys(all.get(pkg)?.manifest.dependencies ?? {})) {
      if (seen.has(dep)) continue;
      seen.add(dep);
      visit(dep);
    }
  };
  visit(name);
  return seen;
}

/** Import specifiers of every .ts (and .tsx) file under `dir` (static, re-exports and dynamic imports), with their file. */
async function importsUnder(dir: string): Promise<Array<{ file: string; specifier: string; typeOnly: boolean }>> {
  const out: Array<{ file: string; specifier: string; typeOnly: boolean }> = [];
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || !/\.tsx?$/.test(entry.name)) continue;
    const file = path.join(entry.parentPath, entry.name);
    const text = await fs.readFile(file, 'utf8');
    for (const match of text.matchAll(/(?:^|\s)(?:import|export)\s([^;]*?)from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
      // `import type …` is erased when the file runs: it reaches no code
      out.push({ file: path.relative(ROOT, file), specifier: match[2] ?? match[3]!, typeOnly: match[1]?.startsWith('type ') ?? false });
    }
  }
  return out;
}

/** Which package a specifier reaches: a bare name, or the package folder a relative path lands in. */
function target(file: string, specifier: string, byDir: Map<string, string>): string {
  if (!specifier.startsWith('.')) return specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
  const resolved = path.resolve(ROOT, path.dirname(file), specifier);
  for (const [dir, name] of byDir) if (resolved === dir || resolved.startsWith(dir + path.sep)) return name;
  return specifier;
}

/** Every .ts (and .tsx) file of the repository's TypeScript (packages, services, test, bench, scripts), less
 *  node_modules, virtual environments, build outputs and the ML core. */
async function workspaceSources(dir = ROOT): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name.startsWith('.') || ['node_modules', 'dist', 'core'].includes(entry.name)) continue;
      out.push(...(await workspaceSources(full)));
    } else if (entry.isFile() && /\.tsx?$/.test(entry.name)) {
      out.push(full);
    }
  }
  return out;
}

/** Import specifiers of `files` (static, re-exports and dynamic imports), with their file relative to ROOT. */
async function importsOf(files: readonly string[]): Promise<Array<{ file: string; specifier: string; typeOnly: boolean }>> {
  const out: Array<{ file: string; specifier: string; typeOnly: boolean }> = [];
  for (const file of files) {
    const text = await fs.readFile(file, 'utf8');
    for (const match of text.matchAll(/(?:^|\s)(?:import|export)\s([^;]*?)from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
      // `import type …` is erased when the file runs: it reaches no code
      out.push({ file: path.relative(ROOT, file), specifier: match[2] ?? match[3]!, typeOnly: match[1]?.startsWith('type ') ?? false });
    }
  }
  return out;
}

/** What breaks the jobs package's rules in `file` (relative to ROOT) importing `specifier`, if anything: inside its
 *  src/, a folder reaches another only through that folder's index.ts and only a folder below it (JOBS_FOLDERS);
 *  outside the package, only the package.json subpaths (`subpaths`, as specifiers) are imported. */
function jobsImportFault(file: string, specifier: string, subpaths: readonly string[]): string | undefined {
  const from = path.resolve(ROOT, file);
  const inSource = from.startsWith(JOBS_SRC + path.sep);
  if (specifier === '@ftp/jobs' || specifier.startsWith('@ftp/jobs/')) {
    if (inSource) return `${file} imports its own package by name (${specifier}); import the folder's index.ts`;
    return subpaths.includes(specifier) ? undefined : `${file} imports ${specifier}, which is not a subpath of @ftp/jobs (${subpaths.join(', ')})`;
  }
  if (!specifier.startsWith('.')) return undefined;
  const resolved = path.resolve(path.dirname(from), specifier);
  if (!resolved.startsWith(JOBS_SRC + path.sep)) return undefined;
  const reached = path.relative(ROOT, resolved);
  if (!from.startsWith(JOBS + path.sep)) {
    return JOBS_FILES_SHARED[`${file} → ${reached}`] ? undefined : `${file} imports ${reached}; outside the jobs package, import its subpaths (${subpaths.join(', ')})`;
  }
  if (!inSource) return undefined; // the package's own tests reach its files
  const [fromFolder] = path.relative(JOBS_SRC, from).split(path.sep);
  const [toFolder, ...rest] = path.relative(JOBS_SRC, resolved).split(path.sep);
  if (!JOBS_FOLDERS[fromFolder!]) return `${file} is in none of the package's folders (${Object.keys(JOBS_FOLDERS).join(', ')})`;
  if (toFolder === fromFolder) return undefined;
  if (rest.join('/') !== 'index.ts') return `${file} imports ${reached}, a file inside ${toFolder}/; import ${toFolder}/index.ts`;
  if (!JOBS_FOLDERS[fromFolder!]!.includes(toFolder!)) return `${file} imports ${toFolder}/, which is not below ${fromFolder}/ (it may import ${JOBS_FOLDERS[fromFolder!]!.join(', ') || 'no other folder'})`;
  return undefined;
}

describe('arrows go down only', async () => {
  const all = await manifests();
  const byDir = new Map([...all].map(([name, { dir }]) => [dir, name]));
  const violations = async (pkg: string, forbidden: readonly string[]) => {
    const { dir } = all.get(pkg)!;
    const fromSource = (await importsUnder(path.join(dir, 'src')))
      .map(({ file, specifier }) => ({ file, reached: target(file, specifier, byDir) }))
      .filter(({ reached }) => reached !== pkg && forbidden.includes(reached))
      .map(({ file, reached }) => `${file} imports ${reached}`);
    const fromManifest = [...runtimeClosure(all, pkg)].filter((dep) => forbidden.includes(dep)).map((dep) => `${pkg} depends on ${dep} (package.json, transitively)`);
    return [...fromSource, ...fromManifest];
  };

  it.each(HTTP_SERVICES)('the %s service imports no other service, no worker, no ML core client and no llama.cpp', async (service) => {
    expect(await violations(`@ftp/${service}`, [...SERVICE_PACKAGES, ...MODEL_HOLDERS])).toEqual([]);
  });

  it('the console’s pages reach the services only over HTTP: types from the schema, pure template code of datasets', async () => {
    // Bundled into the browser: besides npm libraries and its own files, only type imports of @ftp/schema, the committed
    // OpenAPI document, the two dependency-free modules the preview shares with the preprocessing service, the one
    // that makes sizes and figures read as on the training service's job page, and the one that reads which trainers
    // and methods a setting applies to.
    const web = path.join(all.get('@ftp/console')!.dir, 'web', 'src');
    const shared = ['packages/datasets/src/processing/templates.ts', 'packages/datasets/src/processing/normalize.ts', 'packages/jobs/src/training/readable.ts', 'packages/schema/src/setting-scope.ts', 'openapi/training.json'];
    const reached = (await importsUnder(web)).flatMap(({ file, specifier }) => {
      if (specifier.startsWith('.')) {
        const resolved = path.relative(ROOT, path.resolve(ROOT, path.dirname(file), specifier));
        return resolved.startsWith(path.relative(ROOT, web)) || shared.includes(resolved) ? [] : [`${file} imports ${resolved}`];
      }
      return specifier.startsWith('@ftp/') && specifier !== '@ftp/schema' ? [`${file} imports ${specifier}`] : [];
    });
    expect(reached).toEqual([]);
    for (const file of shared.filter((f) => f.endsWith('.ts'))) expect(await importsUnder(path.dirname(path.join(ROOT, file))).then((list) => list.filter((i) => i.file === file))).toEqual([]);
  });

  it('the worker imports no service', async () => {
    expect(await violations('@ftp/worker', SERVICE_PACKAGES)).toEqual([]);
  });

  it.each([...all.keys()].filter((name) => all.get(name)!.dir.startsWith(path.join(ROOT, 'packages'))))('package %s imports no service and no worker', async (pkg) => {
    expect(await violations(pkg, [...SERVICE_PACKAGES, '@ftp/worker'])).toEqual([]);
  });

  it.each(PACKAGE_ORDER.map((pkg, i) => [pkg, PACKAGE_ORDER.slice(0, i)] as const))('package %s imports only the packages before it in schema → platform → jobs → datasets (%j)', async (pkg, before) => {
    // The platform never imports the jobs package (nor the worker); the schema imports nothing of ours.
    const forbidden = [...all.keys()].filter((name) => name !== pkg && !(before as readonly string[]).includes(name));
    expect(await violations(pkg, forbidden)).toEqual([]);
  });

  it('the jobs package is its folders, each a subpath of package.json, with no barrel', async () => {
    const manifest = JSON.parse(await fs.readFile(path.join(JOBS, 'package.json'), 'utf8')) as { exports: Record<string, string> };
    const folders = Object.keys(JOBS_FOLDERS);
    expect(Object.keys(manifest.exports).sort()).toEqual([...folders.map((f) => `./${f}`), './template-render'].sort());
    for (const folder of folders) expect(manifest.exports[`./${folder}`]).toBe(`./src/${folder}/index.ts`);
    const loose = (await fs.readdir(JOBS_SRC, { withFileTypes: true })).filter((e) => !(e.isDirectory() && folders.includes(e.name))).map((e) => e.name);
    expect(loose).toEqual([]);
    // each folder may import only folders listed before it: the order has no cycle
    folders.forEach((folder, i) => expect(JOBS_FOLDERS[folder]!.filter((below) => !folders.slice(0, i).includes(below))).toEqual([]));
  });

  it('a folder of the jobs package reaches another only through its index.ts, and only one below it', async () => {
    const faults = (await importsUnder(JOBS_SRC)).flatMap(({ file, specifier }) => jobsImportFault(file, specifier, []) ?? []);
    expect(faults).toEqual([]);
  });

  it('outside the jobs package, only its package.json subpaths are imported (no @ftp/jobs, no path into its files)', async () => {
    const manifest = JSON.parse(await fs.readFile(path.join(JOBS, 'package.json'), 'utf8')) as { exports: Record<string, string> };
    const subpaths = Object.keys(manifest.exports).map((key) => `@ftp/jobs${key.slice(1)}`);
    const outside = (await workspaceSources()).filter((file) => !file.startsWith(JOBS + path.sep));
    const faults = (await importsOf(outside)).flatMap(({ file, specifier }) => jobsImportFault(file, specifier, subpaths) ?? []);
    expect(faults).toEqual([]);
  });

  it('the fast engine’s process loads no workspace package whole: it starts for every worker and after every crash', async () => {
    // engine-process-main.ts and the files it runs (fast-engine/, less engine-process.ts, the worker's side) reach
    // workspace code through dependency-free subpaths only (types aside: they are erased): the jobs package's barrel
    // alone cost 1.3 s of CPU a start.
    const dependencyFree = ['@ftp/jobs/template-render'];
    const engine = path.join(all.get('@ftp/worker')!.dir, 'src', 'fast-engine');
    const reached = (await importsUnder(engine))
      .filter(({ file, specifier, typeOnly }) => !typeOnly && !file.endsWith('engine-process.ts') && specifier.startsWith('@ftp/') && !dependencyFree.includes(specifier))
      .map(({ file, specifier }) => `${file} imports ${specifier}`);
    expect(reached).toEqual([]);
  });

  it('a package’s or service’s tests import no other one’s tests: support several folders use lives in test/support', async () => {
    const reached: string[] = [];
    for (const { dir } of all.values()) {
      const tests = path.join(dir, 'test');
      if (!(await fs.stat(tests).catch(() => undefined))) continue;
      for (const { file, specifier } of await importsUnder(tests)) {
        const resolved = path.resolve(ROOT, path.dirname(file), specifier);
        const owner = [...byDir.keys()].find((d) => resolved.startsWith(d + path.sep));
        if (specifier.startsWith('.') && owner && owner !== dir && resolved.startsWith(path.join(owner, 'test') + path.sep)) reached.push(`${file} imports ${path.relative(ROOT, resolved)}`);
      }
    }
    expect(reached).toEqual([]);
  });

  it('the check itself sees a violation when there is one', async () => {
    // A relative import into the worker from a service file, and a bare one, are both caught.
    const fake = path.join('services', 'inference', 'src', 'routes', 'x.ts');
    expect(target(fake, '../../../worker/src/index.ts', byDir)).toBe('@ftp/worker');
    expect(target(fake, '@ftp/worker/fast-engine', byDir)).toBe('@ftp/worker');
    expect(target(fake, 'node-llama-cpp', byDir)).toBe('node-llama-cpp');
    // The jobs package's rules: another folder's file, a folder not below, the bare name, a deep path from outside.
    const submit = 'packages/jobs/src/training/submit.ts';
    const subpaths = ['@ftp/jobs/models'];
    expect(jobsImportFault(submit, '../models/index.ts', [])).toBeUndefined();
    expect(jobsImportFault(submit, './grading.ts', [])).toBeUndefined();
    expect(jobsImportFault(submit, '../models/model-store.ts', [])).toMatch(/a file inside models\//);
    expect(jobsImportFault(submit, '../openai/index.ts', [])).toMatch(/not below training\//);
    expect(jobsImportFault('packages/jobs/src/queues/queues.ts', '../models/index.ts', [])).toMatch(/not below queues\//);
    expect(jobsImportFault(submit, '@ftp/jobs/models', subpaths)).toMatch(/its own package/);
    expect(jobsImportFault(fake, '@ftp/jobs/models', subpaths)).toBeUndefined();
    expect(jobsImportFault(fake, '@ftp/jobs', subpaths)).toMatch(/not a subpath/);
    expect(jobsImportFault(fake, '@ftp/jobs/src/models/model-store.ts', subpaths)).toMatch(/not a subpath/);
    expect(jobsImportFault(fake, '../../../../packages/jobs/src/models/index.ts', subpaths)).toMatch(/outside the jobs package/);
  });
});
