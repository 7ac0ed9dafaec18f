// The alert rules (deploy/prometheus/alerts.yml) pass Prometheus' own checks: `promtool check rules` (they parse,
// their expressions are valid PromQL) and `promtool test rules` (each fires on the series that mean it, with the
// sentence it promises, and stays quiet otherwise: deploy/prometheus/alerts.test.yml); docker-compose's Prometheus
// configuration passes `promtool check config`.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const RULES = fileURLToPath(new URL('../deploy/prometheus/', import.meta.url));
const PROMTOOL = process.env.PROMTOOL_BIN ?? '/usr/bin/promtool';

const promtool = (...args: string[]) => promisify(execFile)(PROMTOOL, args, { cwd: RULES }).then(
  ({ stdout, stderr }) => ({ code: 0, text: stdout + stderr }),
  (err: { code?: number | string; stdout?: string; stderr?: string; message: string }) => ({ code: err.code ?? 1, text: `${err.stdout ?? ''}${err.stderr ?? ''}${err.message}` }),
);

describe('the alert rules', () => {
  it('pass promtool check rules', async () => {
    const { code, text } = await promtool('check', 'rules', 'alerts.yml');
    expect(code, text).toBe(0);
    expect(text).toContain('SUCCESS: 7 rules found');
  });

  it('fire as their unit tests say (promtool test rules)', async () => {
    const { code, text } = await promtool('test', 'rules', 'alerts.test.yml');
    expect(code, text).toBe(0);
    expect(text).toContain('SUCCESS');
  });

  it("docker-compose's Prometheus configuration passes promtool check config (the rules beside it included)", async () => {
    // the container writes its token file at start; here one stands in for it
    const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-promcfg-'));
    try {
      await fs.writeFile(path.join(scratch, 'metrics-token'), 'a-token-for-the-check');
      const config = (await fs.readFile(path.join(RULES, 'prometheus.yml'), 'utf8')).replaceAll('/tmp/metrics-token', path.join(scratch, 'metrics-token'));
      await fs.writeFile(path.join(scratch, 'prometheus.yml'), config);
      await fs.copyFile(path.join(RULES, 'alerts.yml'), path.join(scratch, 'alerts.yml'));
      const { code, text } = await promtool('check', 'config', path.join(scratch, 'prometheus.yml'));
      expect(code, text).toBe(0);
      expect(text).toContain('SUCCESS: 7 rules found');
    } finally {
      await fs.rm(scratch, { recursive: true, force: true });
    }
  });
});
