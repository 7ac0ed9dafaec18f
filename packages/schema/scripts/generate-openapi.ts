// Writes openapi/<service>.json from the route contracts, docs/api.md rendered from them and the ML core's training
// contract (core/src/ftcore/train/contract.json) taken from the training document (`pnpm openapi`); with --check it
// only reports which committed files are stale and exits 1, for CI.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiDocsPath, buildCoreContract, buildOpenApiDocument, coreContractPath, openApiDocumentPath, renderApiDocs, SERVICE_NAMES, serializeCoreContract, serializeOpenApiDocument } from '../src/index.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const checkOnly = process.argv.includes('--check');

const stale: string[] = [];
async function write(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const committed = await readFile(path, 'utf8').catch(() => undefined);
  if (committed === text) return;
  stale.push(relative(repoRoot, path));
  if (!checkOnly) await writeFile(path, text);
}

const documents: Array<[string, Awaited<ReturnType<typeof buildOpenApiDocument>>]> = [];
for (const service of SERVICE_NAMES) {
  const document = await buildOpenApiDocument(service);
  documents.push([service, document]);
  await write(openApiDocumentPath(service), serializeOpenApiDocument(document));
}
await write(apiDocsPath(), renderApiDocs(documents));
await write(coreContractPath(), serializeCoreContract(buildCoreContract(documents.find(([service]) => service === 'training')![1])));

if (checkOnly && stale.length > 0) {
  console.error(`Stale: ${stale.join(', ')}. Run \`pnpm openapi\` and commit the result.`);
  process.exit(1);
}
console.log(stale.length === 0 ? 'OpenAPI documents, docs/api.md and the core contract are up to date.' : `Wrote ${stale.join(', ')}.`);
