// A step-indexed chart drawn by uPlot (a chart library made for time series). The chart is made once and fed new
// data as it arrives, so a live job's curve grows without redrawing the page. `data-points` on the figure says how
// many x values uPlot holds (what the browser test watches grow), `data-y-ticks` the y axis's labels as drawn.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { axisWidth, formatTicks } from './format.ts';

/** The x axis's tick spacings: steps and trials are whole numbers (uPlot's own would put 0.1 between two trials). */
const WHOLE_INCREMENTS = Array.from({ length: 8 }, (_, e) => [1, 2, 5].map((m) => m * 10 ** e)).flat();

/** uPlot's own axis font, named so that the y axis can measure its labels in it. */
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", sans-serif';

export interface ChartSeries {
  label: string;
  color: string;
  /** Draw dots only (sparse series such as eval loss), else a line through the gaps. */
  points?: boolean;
}

export interface TimeSeriesChartProps {
  title: string;
  xLabel?: string;
  series: ChartSeries[];
  /** [x values, then one array per series (null where a series has no value at that x)]. */
  data: [number[], ...Array<Array<number | null>>];
  height?: number;
  testId?: string;
  /** Log scale on y (losses spanning orders of magnitude). */
  logY?: boolean;
}

export function TimeSeriesChart({ title, xLabel = 'step', series, data, height = 240, testId, logY }: TimeSeriesChartProps) {
  const figure = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const seriesKey = series.map((s) => s.label).join('|');

  useEffect(() => {
    const element = figure.current!;
    const options: uPlot.Options = {
      title,
      width: Math.max(element.clientWidth, 200),
      height,
      scales: { x: { time: false }, y: logY ? { distr: 3 } : {} },
      axes: [
        { label: xLabel, incrs: WHOLE_INCREMENTS },
        {
          font: AXIS_FONT,
          // as wide as its labels: they are measured in the axis's font, in CSS pixels
          size: (u, values) => {
            u.ctx.font = AXIS_FONT;
            return axisWidth(values, (label) => u.ctx.measureText(label).width);
          },
          // uPlot's own labels round to the tick spacing's decimals, which shows 0 for every tick of a 2e-4 curve.
          values: (_u, splits) => {
            const labels = formatTicks(splits);
            element.dataset.yTicks = labels.join('|');
            return labels;
          },
        },
      ],
      series: [
        { label: xLabel },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          spanGaps: true,
          points: { show: s.points ?? false, size: 6, fill: s.color },
          ...(s.points ? { paths: () => null } : {}),
        })),
      ],
    };
    plot.current = new uPlot(options, data as uPlot.AlignedData, element);
    element.dataset.points = String(plot.current.data[0]?.length ?? 0);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(element.clientWidth, 200), height }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // Rebuilt only when the series change; new data goes through setData below.
  }, [title, seriesKey, height, logY]);

  useEffect(() => {
    if (!plot.current) return;
    plot.current.setData(data as uPlot.AlignedData);
    figure.current!.dataset.points = String(plot.current.data[0]?.length ?? 0);
  }, [data]);

  return <div ref={figure} role="figure" aria-label={title} data-testid={testId} style={{ width: '100%', minHeight: height }} />;
}
