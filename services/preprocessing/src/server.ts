// Runs the preprocessing service as its own process: `pnpm start:preprocessing` (scaled out, with DATABASE_URL, S3_* and
// REDIS_URL shared by every process; workers elsewhere). The embedded default runs it in services/stack instead.
import { runService } from '@ftp/jobs/runtime';
import { buildPreprocessingApp } from './app.ts';

await runService('preprocessing', buildPreprocessingApp);
