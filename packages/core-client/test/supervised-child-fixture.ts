// The IPC child of supervised-child.test.ts: ready at once, then each request answered with its text in capitals after
// its delay; it says on stderr that it started, which a kill's reason ends with.
process.stderr.write('fixture child started\n');
process.on('message', (m: { id: string; text: string; delay: number }) => setTimeout(() => process.send!({ id: m.id, text: m.text.toUpperCase() }), m.delay));
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
