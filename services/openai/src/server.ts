// The OpenAI-compatible service as its own process (scaled out): OPENAI_PORT, default 8000.
import { runService } from '@ftp/jobs/runtime';
import { buildOpenAiApp } from './app.ts';

await runService('openai', buildOpenAiApp);
