// Runs the Tinker-compatible service as its own process: `pnpm start:tinker` (scaled out, with DATABASE_URL, S3_* and
// REDIS_URL shared by every process; workers elsewhere). The embedded default runs it in services/stack instead.
import { runService } from '@ftp/jobs/runtime';
import { buildTinkerApp } from './app.ts';

await runService('tinker', buildTinkerApp);
