#!/usr/bin/env node
// The `ftune` command: runs src/main.ts through tsx (the repository runs its TypeScript with tsx, no build step).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/main.ts');
process.exitCode = await main(process.argv);
