// A sweep's figures: its finished trials' objective by trial number with the best so far (uPlot, as a job's curves),
// and each searched setting against the objective (a small SVG scatter: a setting is no time series).
import { useMemo } from 'react';
import { Card, SimpleGrid, Text } from '@mantine/core';
import type { Sweep, SweepDimension, SweepTrial } from '../../api/types.ts';
import { formatNumber } from '../../components/format.ts';
import { TimeSeriesChart } from '../../components/TimeSeriesChart.tsx';
import { shortPath } from './SweepsPage.tsx';

const COMPLETED = '#4c6ef5';
const PRUNED = '#868e96';
const BEST = '#e8590c';

/** Trials with an objective: completed ones, and pruned ones at their last evaluation. */
const finished = (sweep: Sweep): SweepTrial[] => sweep.trials.filter((t) => (t.state === 'completed' || t.state === 'pruned') && t.value !== null).sort((a, b) => a.trial - b.trial);

export function ObjectiveChart({ sweep }: { sweep: Sweep }) {
  const data = useMemo(() => {
    const trials = finished(sweep);
    const better = sweep.objective.direction === 'minimize' ? Math.min : Math.max;
    // The best so far runs over completed trials only, as best_job_id does: a pruned trial's value is an early one.
    let best: number | null = null;
    const bestSoFar = trials.map((t) => (t.state === 'completed' ? (best = best === null ? t.value! : better(best, t.value!)) : best));
    const only = (state: SweepTrial['state']) => trials.map((t) => (t.state === state ? t.value : null));
    return [trials.map((t) => t.trial), only('completed'), only('pruned'), bestSoFar] as [number[], ...Array<Array<number | null>>];
  }, [sweep]);
  if (data[0].length === 0) return <Text c="dimmed">No trial has finished yet.</Text>;
  return (
    <TimeSeriesChart
      title={`${sweep.objective.metric} (${sweep.objective.direction})`}
      xLabel="trial"
      testId="objective-chart"
      height={220}
      series={[
        { label: 'completed', color: COMPLETED, points: true },
        { label: 'pruned', color: PRUNED, points: true },
        { label: 'best so far', color: BEST },
      ]}
      data={data}
    />
  );
}

export function SettingScatters({ sweep }: { sweep: Sweep }) {
  const trials = finished(sweep);
  if (trials.length === 0) return <Text c="dimmed">The settings are plotted against the objective as trials finish.</Text>;
  return (
    <>
      <SimpleGrid cols={{ base: 1, sm: 2, md: 3 }}>
        {Object.entries(sweep.space).map(([path, dimension]) => (
          <Card withBorder key={path} padding="xs">
            <SettingScatter path={path} dimension={dimension} trials={trials} sweep={sweep} />
          </Card>
        ))}
      </SimpleGrid>
      <Text size="xs" c="dimmed">
        Filled: completed · hollow: pruned (its last evaluation) · orange: the best trial.
      </Text>
    </>
  );
}

interface Axis {
  /** Where a value sits, 0–1 along the axis; null when it is off the axis. */
  at: (value: unknown) => number | null;
  ticks: Array<{ at: number; label: string }>;
}

/** A range's axis (log when it is searched on a log scale), or a choice's categories, evenly spaced (numbers in order). */
function settingAxis(dimension: SweepDimension): Axis {
  if (dimension.type === 'choice') {
    const choices = dimension.choices.every((c) => typeof c === 'number') ? [...dimension.choices].sort((a, b) => (a as number) - (b as number)) : dimension.choices;
    const keys = choices.map((c) => JSON.stringify(c));
    const at = (i: number) => (i + 0.5) / keys.length;
    const every = Math.ceil(keys.length / 8);
    return {
      at: (value) => (keys.includes(JSON.stringify(value)) ? at(keys.indexOf(JSON.stringify(value))) : null),
      ticks: choices.flatMap((c, i) => (i % every === 0 ? [{ at: at(i), label: formatNumber(c, 3) }] : [])),
    };
  }
  const scale = dimension.log ? Math.log : (x: number) => x;
  const [low, high] = [scale(dimension.low), scale(dimension.high)];
  const at = (value: number) => (high === low ? 0.5 : (scale(value) - low) / (high - low));
  return {
    at: (value) => (typeof value === 'number' ? at(value) : null),
    ticks: [dimension.low, dimension.high].map((value) => ({ at: at(value), label: formatNumber(value, 3) })),
  };
}

const W = 300;
const H = 180;
const PAD = { left: 56, right: 12, top: 8, bottom: 30 };

function SettingScatter({ path, dimension, trials, sweep }: { path: string; dimension: SweepDimension; trials: SweepTrial[]; sweep: Sweep }) {
  const name = shortPath(path);
  const { metric } = sweep.objective;
  const axis = settingAxis(dimension);
  const values = trials.map((t) => t.value!);
  const [low, high] = [Math.min(...values), Math.max(...values)];
  const margin = (high - low || Math.abs(high) || 1) * 0.08;
  // Inset a little, so that a point at either end of the range is not drawn on the axis.
  const x = (share: number) => PAD.left + (0.04 + 0.92 * share) * (W - PAD.left - PAD.right);
  const y = (value: number) => H - PAD.bottom - ((value - low + margin) / (high - low + 2 * margin)) * (H - PAD.top - PAD.bottom);
  return (
    <svg viewBox={`0 0 ${W} ${H}`} width="100%" role="figure" aria-label={`${name} against ${metric}`} data-testid={`scatter-${name}`} style={{ fontSize: 10, maxWidth: 420 }}>
      <line x1={PAD.left} y1={H - PAD.bottom} x2={W - PAD.right} y2={H - PAD.bottom} stroke="#ced4da" />
      <line x1={PAD.left} y1={PAD.top} x2={PAD.left} y2={H - PAD.bottom} stroke="#ced4da" />
      {axis.ticks.map((tick, i) => (
        <text key={i} x={x(tick.at)} y={H - PAD.bottom + 12} textAnchor="middle" fill="#868e96">
          {tick.label}
        </text>
      ))}
      <text x={(W + PAD.left) / 2} y={H - 2} textAnchor="middle">
        {name}
        {dimension.type !== 'choice' && dimension.log ? ' (log)' : ''}
      </text>
      {[low, high].map((value, i) => (
        <text key={i} x={PAD.left - 4} y={y(value) + 3} textAnchor="end" fill="#868e96">
          {formatNumber(value, 3)}
        </text>
      ))}
      <text transform={`translate(9 ${(H - PAD.bottom) / 2}) rotate(-90)`} textAnchor="middle">
        {metric}
      </text>
      {trials.map((trial) => {
        const share = axis.at(trial.params[path]);
        if (share === null) return null;
        const color = trial.job_id !== null && trial.job_id === sweep.best_job_id ? BEST : trial.state === 'pruned' ? PRUNED : COMPLETED;
        return (
          <circle key={trial.trial} cx={x(share)} cy={y(trial.value!)} r={4} fill={trial.state === 'pruned' ? 'none' : color} stroke={color} strokeWidth={1.5} data-state={trial.state} data-trial={trial.trial}>
            <title>{`trial ${trial.trial} (${trial.state}): ${name} ${formatNumber(trial.params[path], 3)} → ${metric} ${formatNumber(trial.value)}`}</title>
          </circle>
        );
      })}
    </svg>
  );
}
