export * from './events.ts';
export * from './run-core.ts';
