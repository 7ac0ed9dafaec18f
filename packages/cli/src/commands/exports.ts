// ftune export JOB: POST /exports, and with --follow or --download the export until it ends (and its file on disk);
// ftune exports list | get | download: the export service's /exports. The API deletes no export on its own: an
// export's files go with its job (ftune jobs rm).
import { Command, type CommandUnknownOpts, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import type { ArtifactGroups, ExportCreateResult, ExportDetails, ExportList, ExportRecord, ExportRequest } from '@ftp/schema';
import { ENV_NAMES } from '../config.ts';
import { downloadExport, type DownloadMode, type Downloaded } from '../download.ts';
import { CliError, UsageError } from '../errors.ts';
import { followExport } from '../follow-export.ts';
import { segment } from '../http.ts';
import { formatBytes, printJson, printKeyValue, printLine, printTable } from '../output.ts';
import { context, JSON_HELP } from './context.ts';
import { CHECKPOINT_HELP, checkpointChoice } from './option-values.ts';

const EXPORT_TYPES = ['adapter', 'merged', 'gguf', 'onnx'] as const;
const ONNX_VARIANTS = ['fp32', 'fp16', 'q4', 'q4f16'] as const;
/** What an ONNX export may write beside fp32 (POST /exports onnx_variants). */
type OnnxExtraVariant = NonNullable<ExportRequest['onnx_variants']>[number];
const ONNX_EXTRA_VARIANTS = ['fp16', 'q4', 'q4f16'] as const satisfies readonly OnnxExtraVariant[];
const QUANTIZATIONS = ['f16', 'bf16', 'q8_0', 'q4_k_m'] as const;

/** Every artifact location of a job, one row per (type, variant). */
function artifactRows(groups: ArtifactGroups): string[][] {
  const rows: string[][] = [];
  for (const [variant, group] of Object.entries(groups) as Array<[string, Record<string, string | null | undefined>]>) {
    for (const [type, location] of Object.entries(group)) if (location) rows.push([type, variant, location]);
  }
  return rows;
}

/** An ONNX export's agreement with transformers, per variant: "fp32 100%, fp16 100%, q4 41% (not usable), …". */
const parityText = (parity: ExportRecord['parity']) => parity?.map((p) => `${p.variant} ${Math.round(p.agreement * 100)}%${p.usable ? '' : ' (not usable)'}`).join(', ');

/** An export record as key/value lines, `more` rows after its own. */
function printExportRecord(record: ExportRecord, more: ReadonlyArray<readonly [string, unknown]> = []): void {
  printKeyValue([
    ['export_id', record.export_id],
    ['type', record.type],
    ['checkpoint_step', record.checkpoint_step ?? undefined],
    ['checkpoint_name', record.checkpoint_name ?? undefined],
    ['status', record.status],
    ['destination', record.destination],
    ['hub_repo_id', record.hub_repo_id ?? undefined],
    ['message', record.message ?? undefined],
    ['started_at', record.started_at],
    ['finished_at', record.finished_at ?? undefined],
    ['parity', parityText(record.parity)],
    ...more,
  ]);
}

function printExportDetails(details: ExportDetails): void {
  printKeyValue([
    ['job_id', details.job_id],
    ['job_name', details.job_name],
    ['base_model_id', details.base_model_id],
    ['modality', details.modality],
    // the model files `download --type onnx --variant` offers, each marked as its export measured it
    ['onnx_variants', parityText(details.onnx_variants)],
  ]);
  const rows = artifactRows(details.artifacts);
  if (rows.length > 0) printTable(['TYPE', 'VARIANT', 'LOCATION'], rows);
  if (details.latest_export) {
    printLine('latest export:');
    printExportRecord(details.latest_export);
  }
}

/** How waiting and downloading show: a live line or bar on a terminal, plain lines otherwise, nothing with --json. */
function progressMode(json: boolean, interactive: boolean): DownloadMode {
  return json ? 'quiet' : interactive ? 'live' : 'lines';
}

/** --onnx-variants fp16,q4: the names, each one of ONNX_EXTRA_VARIANTS ("" is none). */
function onnxVariantList(value: string): OnnxExtraVariant[] {
  const names = value.split(',').map((v) => v.trim()).filter(Boolean);
  const unknown = names.filter((v) => !(ONNX_EXTRA_VARIANTS as readonly string[]).includes(v));
  if (unknown.length) throw new InvalidArgumentError(`${unknown.join(', ')}: choose from ${ONNX_EXTRA_VARIANTS.join(', ')} (fp32 is always written)`);
  return [...new Set(names)] as OnnxExtraVariant[];
}

export function exportCommand(): CommandUnknownOpts {
  return new Command('export')
    .description('export a trained job’s model (adapter, merged model, GGUF or ONNX) to cloud storage and/or a model-hub repository')
    .argument('<job>', 'job_id of a completed training job (any job, with --checkpoint STEP), or a Tinker run’s id with --checkpoint NAME')
    .addOption(new Option('--type <type>', 'what to export (service default: adapter)').choices(EXPORT_TYPES))
    .addOption(new Option('--quantization <type>', 'GGUF tensor type, with --type gguf (service default: q8_0)').choices(QUANTIZATIONS))
    .option('--checkpoint <step|name>', `export this instead of the job’s final model: ${CHECKPOINT_HELP}`, checkpointChoice)
    .option('--hub <repo>', `also publish to this model-hub repository (owner/name); the token comes from ${ENV_NAMES.hubToken} or the config file`)
    .option('--no-cloud', 'with --hub: publish to the hub only, not to cloud storage')
    .option('--download <dir>', 'wait for the export and download its file into this folder (made when missing)')
    .addOption(new Option('--variant <variant>', 'with --type onnx and --download: one model file instead of the folder’s archive').choices(ONNX_VARIANTS))
    .option('--onnx-variants <list>', 'with --type onnx: the variants written beside fp32, comma-separated from fp16, q4, q4f16 ("" for fp32 alone; service default: all three)', onnxVariantList)
    .option('--follow', 'wait until the export ends; exit 0 only when it completed')
    .option('--json', 'print the API’s JSON document (when waiting: GET /exports/{job_id} at the end, with `downloaded` files)')
    .action(async (jobId, options, command) => {
      const { api, json, interactive } = context(command);
      if (options.quantization && options.type !== 'gguf') throw new UsageError('--quantization goes with --type gguf');
      if (options.variant && (options.type !== 'onnx' || options.download === undefined)) throw new UsageError('--variant goes with --type onnx and --download');
      if (options.onnxVariants && options.type !== 'onnx') throw new UsageError('--onnx-variants goes with --type onnx');
      if (!options.cloud && !options.hub) throw new UsageError('--no-cloud leaves no destination; add --hub owner/name');
      if (options.download !== undefined && !options.cloud) throw new UsageError('--download needs the cloud copy; leave out --no-cloud');
      const hubToken = api.settings.hubToken;
      if (options.hub && !hubToken) {
        throw new UsageError(`--hub needs the model hub's token: set ${ENV_NAMES.hubToken}, or ${ENV_NAMES.hubToken} in ${api.settings.configFile}`);
      }
      const type = options.type ?? 'adapter';
      const body: Partial<ExportRequest> & { job_id: string } = {
        job_id: jobId,
        export_type: type,
        destination: [...(options.cloud ? ['cloud' as const] : []), ...(options.hub ? ['hub' as const] : [])],
        ...options.checkpoint,
        ...(options.quantization ? { gguf_quantization: options.quantization } : {}),
        ...(options.onnxVariants ? { onnx_variants: options.onnxVariants } : {}),
        ...(options.hub ? { hub_repo_id: options.hub, hub_token: hubToken } : {}),
      };
      const created = await api.json<ExportCreateResult>('export', 'POST', '/exports', { json: body });
      if (!options.follow && options.download === undefined) {
        if (json) return printJson(created);
        return printKeyValue([['export_id', created.export_id], ['message', created.message]]);
      }
      if (!json) printKeyValue([['export_id', created.export_id]]);
      const mode = progressMode(json, interactive);
      const details = await followExport(api, jobId, created.export_id, mode);
      const record = details.latest_export!;
      const downloaded: Downloaded[] = [];
      if (record.status === 'completed' && options.download !== undefined) {
        downloaded.push(await downloadExport(api, { jobId, type, variant: options.variant, checkpointStep: options.checkpoint?.checkpoint_step, checkpointName: options.checkpoint?.checkpoint_name, dir: options.download }, mode));
      }
      if (json) printJson(options.download === undefined ? details : { ...details, downloaded });
      else printExportRecord(record, downloaded.map((file) => ['downloaded', `${file.path} (${formatBytes(file.size_bytes)})`] as const));
      if (record.status !== 'completed') throw new CliError(`export ${record.export_id} ${record.status}: ${record.message ?? 'no message given'}`);
    });
}

export function exportsCommand(): Command {
  const exports = new Command('exports').description('list jobs with exported artifacts, show and download them (export service)');

  exports
    .command('list')
    .description('list your training jobs that have artifacts')
    .option('--json', JSON_HELP)
    .action(async (_options, command) => {
      const { api, json } = context(command);
      const result = await api.json<ExportList>('export', 'GET', '/exports');
      if (json) return printJson(result);
      if (result.length === 0) return printLine('no exports');
      // FILES: the types `exports download` can fetch; HUB: the repositories published to.
      printTable(
        ['JOB', 'NAME', 'BASE MODEL', 'FILES', 'HUB'],
        result.map((e) => [
          e.job_id, e.job_name, e.base_model_id,
          Object.entries(e.artifacts.file).filter(([, uri]) => uri).map(([type]) => type),
          Object.values(e.artifacts.hub).filter(Boolean),
        ]),
      );
    });

  exports
    .command('get')
    .description('show a job’s artifacts and its latest export')
    .argument('<job>', 'job_id')
    .option('--json', JSON_HELP)
    .action(async (jobId, _options, command) => {
      const { api, json } = context(command);
      const details = await api.json<ExportDetails>('export', 'GET', `/exports/${segment(jobId)}`);
      if (json) return printJson(details);
      printExportDetails(details);
    });

  exports
    .command('download')
    .description('download a job’s exported file (the adapter, merged or ONNX archive, the GGUF file, or one ONNX model)')
    .argument('<job>', 'job_id')
    .addOption(new Option('--type <type>', 'which file').choices(EXPORT_TYPES).makeOptionMandatory())
    .addOption(new Option('--variant <variant>', 'with --type onnx: one model file (onnx/model_<variant>.onnx) instead of the folder’s archive').choices(ONNX_VARIANTS))
    .option('--checkpoint <step|name>', `the file of an export of this checkpoint: ${CHECKPOINT_HELP}`, checkpointChoice)
    .option('--dir <dir>', 'the folder to write into (made when missing)', '.')
    .option('--json', 'print {path, size_bytes} of the file written')
    .action(async (jobId, options, command) => {
      const { api, json, interactive } = context(command);
      if (options.variant && options.type !== 'onnx') throw new UsageError('--variant goes with --type onnx');
      const file = await downloadExport(api, { jobId, type: options.type, variant: options.variant, checkpointStep: options.checkpoint?.checkpoint_step, checkpointName: options.checkpoint?.checkpoint_name, dir: options.dir }, progressMode(json, interactive));
      if (json) return printJson(file);
      printKeyValue([['downloaded', `${file.path} (${formatBytes(file.size_bytes)})`]]);
    });

  return exports;
}
