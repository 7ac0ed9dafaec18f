// The export service as a library: the embedded stack and the end-to-end tests build it from here; the
// training service presents a job's latest export with the same presenter.
export { buildExportApp } from './app.ts';
export { presentExportRecord } from './presenters.ts';
