// The pre-flight report: what a run will see and cost (examples, tokens, truncation, steps, memory, time per worker),
// its warnings, and the first examples as training sees them with the trained spans marked.
import { Alert, Code, List, Mark, Stack, Table, Text } from '@mantine/core';
import type { PreflightReport } from '../../api/types.ts';
import { estimatedTime, formatBytes } from '../../components/format.ts';

export function PreflightView({ report }: { report: PreflightReport }) {
  const { tokens, truncated, steps, memory, model } = report;
  const rows: Array<[string, string]> = [
    ['trainer, method', `${report.trainer_type}, ${report.method}`],
    ['examples', `${report.examples.train} train${report.examples.test === null || report.examples.test === undefined ? '' : `, ${report.examples.test} test`}`],
    ['tokens per example', `min ${tokens.min} · median ${tokens.median} · p95 ${tokens.p95} · max ${tokens.max}`],
    [`truncated at max_length ${report.max_length}`, `${truncated.examples} examples, ${truncated.loss_tokens_lost} trained tokens lost`],
    ['tokens carrying loss', report.loss_token_share === null || report.loss_token_share === undefined ? '—' : `${(report.loss_token_share * 100).toFixed(1)}%`],
    ['steps', `${steps.per_epoch} per epoch, ${steps.total} in total (effective batch ${steps.effective_batch_size})`],
    ['training tokens', report.training_tokens.toLocaleString('en')],
    ['trainable parameters', `${model.trainable_parameters.toLocaleString('en')} of ${model.parameters.toLocaleString('en')} (${model.dtype})`],
    ['estimated peak memory', formatBytes(memory.estimated_peak_bytes)],
    ...report.estimates.map((e): [string, string] => [
      `on ${e.host} (${e.device})`,
      `${estimatedTime(e)}; ${e.fits ? 'fits' : 'does not fit'} in ${formatBytes(e.memory_bytes)}`,
    ]),
  ];
  return (
    <Stack gap="sm" data-testid="preflight">
      {report.warnings.length > 0 && (
        <Alert color="yellow" title="Warnings" variant="light">
          <List size="sm">
            {report.warnings.map((w, i) => (
              <List.Item key={i}>
                <b>{w.code}</b>: {w.message}
              </List.Item>
            ))}
          </List>
        </Alert>
      )}
      <Table withRowBorders fz="sm" aria-label="Pre-flight report">
        <Table.Tbody>
          {rows.map(([label, value]) => (
            <Table.Tr key={label}>
              <Table.Th w="40%">{label}</Table.Th>
              <Table.Td>{value}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {report.samples.length > 0 && (
        <>
          <Text size="sm">
            The first examples as training sees them; <Mark>marked</Mark> text carries the loss:
          </Text>
          {report.samples.map((sample, i) => (
            <Code key={i} block style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
              {sample.segments.map((segment, j) => (segment.trained ? <Mark key={j}>{segment.text}</Mark> : <span key={j}>{segment.text}</span>))}
            </Code>
          ))}
        </>
      )}
    </Stack>
  );
}
