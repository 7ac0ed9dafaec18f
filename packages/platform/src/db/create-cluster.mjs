// Creates an empty PGlite cluster in the folder given as argv[2], then exits. Run as a child process
// by database.ts: initdb inside PGlite peaks near 800 MB and WASM memory never shrinks, so doing it in
// the server would leave the server that large for its whole life. Plain JS so it needs no TS loader.
import { PGlite } from '@electric-sql/pglite';

const [dataDir, options] = [process.argv[2], JSON.parse(process.argv[3] ?? '{}')];
const db = await PGlite.create(dataDir, options);
await db.close();
