// The web console as the embedded stack and server.ts use it.
export { buildConsoleApp, CONSOLE_UPSTREAMS, type ConsoleOptions, type ConsoleUpstream } from './app.ts';
export { consoleUpstreams } from './upstreams.ts';
