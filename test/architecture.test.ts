// Arrows go down only (DESIGN.md): services → packages (jobs, platform, schema); no HTTP service imports another
// service, the worker, the ML core's client or llama.cpp (HTTP processes hold no model), the worker imports no
// service, and packages import no service or worker. Checked on the source imports of every production file
// and on the workspace dependency graph (package.json `dependencies`, followed transitively).
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const HTTP_SERVICES = ['preprocessing', 'training', 'export', 'inference', 'openai', 'console'] as const;
const SERVICE_PACKAGES = [...HTTP_SERVICES.map((s) => `@ftp/${s}`), '@ftp/stack'];
const MODEL_HOLDERS = ['@ftp/worker', '@ftp/core-client', 'node-llama-cpp'];

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
async function importsUnder(dir: string): Promise<Array<{ file: string; specifier: string }>> {
  const out: Array<{ file: string; specifier: string }> = [];
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || !/\.tsx?$/.test(entry.name)) continue;
    const file = path.join(entry.parentPath, entry.name);
    const text = await fs.readFile(file, 'utf8');
    for (const match of text.matchAll(/(?:^|\s)(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
      out.push({ file: path.relative(ROOT, file), specifier: match[1] ?? match[2]! });
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
    const shared = ['packages/datasets/src/processing/templates.ts', 'packages/datasets/src/processing/normalize.ts', 'packages/jobs/src/readable.ts', 'packages/schema/src/setting-scope.ts', 'openapi/training.json'];
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

  it('the fast engine’s process loads no workspace package whole: it starts for every worker and after every crash', async () => {
    // engine-process-main.ts and the files it runs (fast-engine/, less engine-process.ts, the worker's side) reach
    // workspace code through dependency-free subpaths only: the jobs package's barrel alone cost 1.3 s of CPU a start.
    const engine = path.join(all.get('@ftp/worker')!.dir, 'src', 'fast-engine');
    const reached = (await importsUnder(engine))
      .filter(({ file, specifier }) => !file.endsWith('engine-process.ts') && /^@ftp\/[^/]+$/.test(specifier))
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
  });
});
