// How numbers read in the console: a chart's axis labels keep every tick apart with as few digits as they need (a
// learning-rate curve around 2e-4 read "0 / 0 / 0" under uPlot's own labels), and counts agree with their noun.
import { describe, expect, it } from 'vitest';
import { axisWidth, formatNumber, formatTicks, plural, runSeconds } from '../web/src/components/format.ts';

describe('formatTicks', () => {
  it('labels small rates in exponent form, each tick its own label', () => {
    expect(formatTicks([0, 0.00005, 0.0001, 0.00015, 0.0002])).toEqual(['0', '5e-5', '1e-4', '1.5e-4', '2e-4']);
  });

  it('labels ordinary numbers with the digits that tell them apart, without float error', () => {
    expect(formatTicks([0.1, 0.2, 0.30000000000000004])).toEqual(['0.1', '0.2', '0.3']);
    expect(formatTicks([0, 0.002, 0.004, 0.006])).toEqual(['0', '0.002', '0.004', '0.006']);
    expect(formatTicks([12000, 12500, 13000])).toEqual(['12000', '12500', '13000']);
    expect(formatTicks([2.5, 3, 3.5])).toEqual(['2.5', '3', '3.5']);
  });
});

describe('plural', () => {
  it('says 1 sample and 2 samples', () => {
    expect(plural(1, 'sample')).toBe('1 sample');
    expect(plural(2, 'sample')).toBe('2 samples');
    expect(plural(0, 'sample')).toBe('0 samples');
  });
});

describe('runSeconds', () => {
  it('is finished_at − started_at, whatever updated_at says (an export later moves it), and nothing before the end (#54)', () => {
    const job = { created_at: '2026-11-28T09:59:00Z', started_at: '2026-11-28T10:00:00Z', finished_at: '2026-11-28T10:01:23Z', updated_at: '2026-11-28T12:00:00Z' };
    expect(runSeconds(job)).toBe(83);
    expect(runSeconds({ ...job, started_at: null })).toBe(143); // cancelled before a worker took it
    expect(runSeconds({ ...job, finished_at: null })).toBeNull();
  });
});

describe('formatNumber', () => {
  it('writes every loss alike, as the training service’s job page does: significant digits, no trailing zeros (#54)', () => {
    expect([0.001, 0.0007, 2.34567, 0.5, 1.25e-5].map((v) => formatNumber(v))).toEqual(['0.001', '0.0007', '2.346', '0.5', '1.25e-5']);
    expect(formatNumber(2.3333, 2)).toBe('2.3');
    expect([12345.6, 3, null, undefined].map((v) => formatNumber(v))).toEqual(['12,346', '3', '—', '—']);
  });
});

describe('axisWidth', () => {
  it('makes room for the widest label: a learning rate’s 0.0008 is not cut to .0008 (#54)', () => {
    const sevenPixels = (label: string) => 7 * label.length;
    const labels = formatTicks([0, 0.0002, 0.0004, 0.0006, 0.0008, 0.001]);
    expect(labels.at(-2)).toBe('0.0008');
    expect(axisWidth(labels, sevenPixels)).toBe(6 * 7 + 15 + 2);
    expect(axisWidth(labels, sevenPixels)).toBeGreaterThan(50); // uPlot's fixed default
    expect(axisWidth(null, sevenPixels)).toBe(17);
  });
});
