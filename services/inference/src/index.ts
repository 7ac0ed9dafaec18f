// The inference service as a library: the embedded stack and the end-to-end tests build it from here.
export { buildInferenceApp } from './app.ts';
