// vitest globalSetup of the unit tier: the tiny models its tests read (tinyModelsDir, toolModelsDir) made before any
// test file runs, here in vitest's own process, where making them with the core is allowed (unit-tier.ts refuses it in
// a test). On a clean machine a unit test otherwise found no model and was refused the process that makes it; with
// the models cached (the usual case) this takes milliseconds.
import { tinyModelsDir, toolModelsDir } from './tiny-model.ts';

export default async function setup(): Promise<void> {
  await tinyModelsDir();
  await toolModelsDir();
}
