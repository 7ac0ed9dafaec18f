// Runs the export service as its own process: `pnpm start:export` (scaled out, with DATABASE_URL, S3_* and
// REDIS_URL shared by every process; workers elsewhere). The embedded default runs it in services/stack instead.
import { runService } from '@ftp/jobs/runtime';
import { buildExportApp } from './app.ts';

await runService('export', buildExportApp);
