// The process an ONNX export is checked in (onnx-verify.ts's measureOnnxParityApart starts it):
// `onnx-verify-main.ts FOLDER REFERENCE_FILE` sends the variants' parity (or the error) over IPC and exits. ONNX Runtime's native
// code runs here, so its abort or an out-of-memory kill ends this process, not the worker's.
import { readFile } from 'node:fs/promises';
import { childOfWorker } from '../child-process.ts';
import { measureOnnxParity, type OnnxReference } from './onnx-verify.ts';

childOfWorker();
const [folder, reference] = process.argv.slice(2);
try {
  const parity = await measureOnnxParity(folder!, JSON.parse(await readFile(reference!, 'utf8')) as OnnxReference);
  process.send!({ parity }, () => process.exit(0));
} catch (err) {
  process.send!({ error: (err as Error).message }, () => process.exit(1));
}
