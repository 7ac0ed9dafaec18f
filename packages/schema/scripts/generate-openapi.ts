// Writes openapi/<service>.json from the route contracts (`pnpm openapi`); with --check it only
// reports which committed documents are stale and exits 1, for CI.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument, openApiDocumentPath, SERVICE_NAMES, serializeOpenApiDocument } from '../src/index.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const checkOnly = process.argv.includes('--check');

const stale: string[] = [];
for (const service of SERVICE_NAMES) {
  const path = openApiDocumentPath(service);
  await mkdir(dirname(path), { recursive: true });
  const text = serializeOpenApiDocument(await buildOpenApiDocument(service));
  const committed = await readFile(path, 'utf8').catch(() => undefined);
  if (committed === text) continue;
  stale.push(relative(repoRoot, path));
  if (!checkOnly) await writeFile(path, text);
}

if (checkOnly && stale.length > 0) {
  console.error(`Stale OpenAPI documents: ${stale.join(', ')}. Run \`pnpm openapi\` and commit the result.`);
  process.exit(1);
}
console.log(stale.length === 0 ? 'OpenAPI documents are up to date.' : `Wrote ${stale.join(', ')}.`);
