import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** A time series drawn by uPlot, resized with its box. `values` are [unix seconds, value] pairs. */
export function Chart(props: { title: string; unit: string; points: Array<[number, number]> }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = props.points.map((p) => p[0]);
    const ys = props.points.map((p) => p[1]);
    const plot = new uPlot(
      {
        width: el.clientWidth || 600,
        height: 220,
        series: [{}, { label: props.unit, stroke: 'rgb(79, 70, 229)', fill: 'rgba(79, 70, 229, 0.12)', width: 2 }],
        axes: [{ stroke: 'currentColor' }, { stroke: 'currentColor', size: 60 }],
        legend: { show: true },
      },
      [xs, ys],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [props.points, props.unit]);
  return (
    <figure className="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={box} role="img" aria-label={`${props.title} chart`} />
    </figure>
  );
}
