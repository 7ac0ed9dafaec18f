// The training service as a library: the embedded stack and the end-to-end tests build it from here.
export { buildTrainingApp } from './app.ts';
