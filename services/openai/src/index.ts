// The OpenAI-compatible service as a library: the embedded stack and the tests build it from here.
export { buildOpenAiApp } from './app.ts';
