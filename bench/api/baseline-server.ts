// The baseline of bench/api: a bare Fastify process answering one route with a fixed JSON body of the size of a
// training job, no database, no auth, no validation. What this machine's loopback, Node and the load generator
// cost on their own, measured in the same run: the floor our services' latencies are read against.
import Fastify from 'fastify';

const body = {
  job_id: 'job_0123456789abcdef01234567', job_name: 'bench', status: 'queued', modality: 'text', tracker_url: null,
  processed_dataset_id: 'pd_0123456789abcdef01234567', adapter_path: null, base_model_id: 'tiny', gguf_path: null,
  metrics: null, error: null, created_at: new Date().toISOString(), updated_at: new Date().toISOString(), progress: null,
  artifacts: { file: {}, raw: {}, hub: {} }, latest_export: null,
};
const app = Fastify();
app.get('/jobs/:job_id', async () => body);
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
