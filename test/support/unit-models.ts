// vitest globalSetup of the unit tier: the tiny models its tests read (tinyModelsDir, toolModelsDir) and the migrated
// PGlite folder openTestPlatform copies (its cluster is made by initdb in a child process) made before any test file
// runs, here in vitest's own process, where starting those processes is allowed (unit-tier.ts refuses it in a test).
// On a clean machine, or after any change to a migration file (the template is keyed by their contents), a unit test
// otherwise found neither and was refused the process that makes it; cached (the usual case) this takes milliseconds.
import { pgliteTemplate } from '@ftp/platform/testing';
import { tinyModelsDir, toolModelsDir } from './tiny-model.ts';

export default async function setup(): Promise<void> {
  await tinyModelsDir();
  await toolModelsDir();
  await pgliteTemplate();
}
