export * from './events.ts';
export * from './run-core.ts';
export * from './core-server.ts';
export * from './tinker-core.ts';
