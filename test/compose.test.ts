// docker-compose.yml is the production path, and images cannot be pulled on the machines that run this suite, so
// the file is checked against the code instead: it has the stores and every process the project has, each app's
// command is a script of package.json, every variable it sets is one the services read (a typo would be silently
// ignored), ports match, the drivers point at the compose services, and a GPU worker reserves the GPUs.
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '@ftp/platform';
import { SERVICE_PORTS } from '@ftp/jobs/runtime';
import { services as serviceInfo } from '@ftp/schema';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  profiles?: string[];
  deploy?: { resources?: { reservations?: { devices?: Array<{ driver: string; capabilities: string[] }> } } };
}

describe('docker-compose.yml', async () => {
  const compose = parse(await fs.readFile(`${ROOT}docker-compose.yml`, 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
  const scripts = (JSON.parse(await fs.readFile(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts;
  // The services and workers on the shared stores; the console (static pages, a forwarder) is checked on its own.
  const apps = Object.entries(compose.services).filter(([name, s]) => s.build && name !== 'console');
  // ${VAR:-default} and ${VAR:?message} as a deployment would resolve them with nothing set.
  const resolved = (value: string) => value.replace(/\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}/g, (_m, name: string, fallback?: string) => fallback ?? `<${name}>`);

  it('has the three stores, the six HTTP services, a worker (CPU, and GPU under a profile) and Prometheus', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['console', 'export', 'inference', 'openai', 'postgres', 'preprocessing', 'prometheus', 'redis', 's3', 'tinker', 'training', 'worker', 'worker-gpu']);
    expect(compose.services.s3!.image).toMatch(/seaweedfs/);
  });

  it.each(Object.keys(SERVICE_PORTS))('%s runs its own process on its own port', (name) => {
    const service = compose.services[name]!;
    expect(service.command).toEqual(['pnpm', `start:${name}`]);
    expect(scripts[`start:${name}`]).toBe(`tsx services/${name}/src/server.ts`);
    const port = String(serviceInfo[name as keyof typeof serviceInfo].defaultPort);
    expect(service.environment![SERVICE_PORTS[name as keyof typeof SERVICE_PORTS]]).toBe(port);
    expect(service.ports).toEqual([`${port}:${port}`]);
  });

  it('the console runs `pnpm start:console` on its port and forwards to each service by its compose name', () => {
    const service = compose.services.console!;
    expect(service.command).toEqual(['pnpm', 'start:console']);
    expect(scripts['start:console']).toBe('tsx services/console/src/server.ts');
    const environment = service.environment!;
    expect(Object.keys(environment).filter((key) => !CONFIG_VARIABLES.includes(key))).toEqual([]);
    const config = loadConfig(Object.fromEntries(Object.entries(environment).map(([k, v]) => [k, String(v)])));
    expect(service.ports).toEqual([`${config.CONSOLE_PORT}:${config.CONSOLE_PORT}`]);
    for (const name of Object.keys(SERVICE_PORTS) as Array<keyof typeof SERVICE_PORTS>) {
      const url = config[`CONSOLE_${name.toUpperCase()}_URL` as 'CONSOLE_TRAINING_URL'];
      expect(url, name).toBe(`http://${name}:${config[SERVICE_PORTS[name]]}`);
    }
  });

  it('workers run `pnpm start:worker`; the GPU worker reserves the NVIDIA GPUs', () => {
    expect(scripts['start:worker']).toBe('tsx services/worker/src/main.ts');
    for (const name of ['worker', 'worker-gpu']) expect(compose.services[name]!.command).toEqual(['pnpm', 'start:worker']);
    expect(compose.services['worker-gpu']!.profiles).toEqual(['gpu']);
    expect(compose.services['worker-gpu']!.deploy?.resources?.reservations?.devices).toEqual([{ driver: 'nvidia', count: 'all', capabilities: ['gpu'] }]);
  });

  it.each(apps.map(([name]) => name))('%s sets only variables the code reads, and they parse', (name) => {
    const environment = compose.services[name]!.environment!;
    expect(Object.keys(environment).filter((key) => !CONFIG_VARIABLES.includes(key))).toEqual([]);
    const config = loadConfig(Object.fromEntries(Object.entries(environment).map(([k, v]) => [k, k === 'SECRETS_KEY' ? Buffer.alloc(32).toString('base64') : k === 'METRICS_TOKEN' ? 'f'.repeat(48) : resolved(String(v))])));
    // The scaled-out drivers, pointed at the compose services.
    expect(new URL(config.DATABASE_URL!).host).toBe('postgres:5432');
    expect(new URL(config.REDIS_URL!).host).toBe('redis:6379');
    expect(new URL(config.S3_ENDPOINT!).host).toBe('s3:8333');
    expect(config.HOST).toBe('0.0.0.0');
  });

  it("Prometheus scrapes every service and the worker on their compose ports, with the services' METRICS_TOKEN", async () => {
    const prometheus = compose.services.prometheus!;
    expect(prometheus.image).toMatch(/^prom\/prometheus:/);
    const config = parse(await fs.readFile(`${ROOT}deploy/prometheus/prometheus.yml`, 'utf8')) as { scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }> };
    const targets = config.scrape_configs.flatMap((job) => job.static_configs.flatMap((c) => c.targets)).sort();
    const expected = Object.entries(SERVICE_PORTS).map(([name, key]) => `${name}:${compose.services[name]!.environment![key]}`);
    expect(targets).toEqual([...expected, `worker:${loadConfig({}).WORKER_METRICS_PORT}`].sort());
    expect(prometheus.environment!.METRICS_TOKEN).toBe(compose.services.training!.environment!.METRICS_TOKEN);
  });

  it('the S3 credentials the services sign with are the identity SeaweedFS is started with', () => {
    const s3 = compose.services.s3!.environment!;
    const app = compose.services.training!.environment!;
    expect(resolved(s3.AWS_ACCESS_KEY_ID!)).toBe(resolved(app.S3_ACCESS_KEY_ID!));
    expect(resolved(s3.AWS_SECRET_ACCESS_KEY!)).toBe(resolved(app.S3_SECRET_ACCESS_KEY!));
  });

  it('builds from Dockerfiles that exist; the worker image has the Python core from its lockfile', async () => {
    for (const [, service] of apps) await expect(fs.stat(`${ROOT}${service.build!.dockerfile}`)).resolves.toBeDefined();
    const worker = await fs.readFile(`${ROOT}${compose.services.worker!.build!.dockerfile}`, 'utf8');
    expect(worker).toMatch(/uv sync --frozen/);
    expect(worker).toMatch(/pnpm install --frozen-lockfile/);
  });
});
