// The Tinker-compatible service as a library: the embedded stack and the tests build it from here.
export { buildTinkerApp } from './app.ts';
