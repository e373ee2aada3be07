import http from 'node:http';
import https from 'node:https';
import { ValueType, type Attributes } from '@opentelemetry/api';
import { ExportResultCode, hrTime, millisToHrTime } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { emptyResource } from '@opentelemetry/resources';
import { AggregationTemporality, DataPointType, type MetricData } from '@opentelemetry/sdk-metrics';
import { isPublicAddress, literalAddress } from '../lib/ip-ranges.js';
import { guardedLookup } from './guarded-lookup.js';

/** One value of one metric: a gauge (its value now) or a cumulative sum (its total since `startTime`). */
export interface MetricPoint {
  name: string;
  description: string;
  unit: string;
  kind: 'gauge' | 'sum';
  value: number;
  attributes: Attributes;
  /** A sum's start: when its total began. */
  startTime?: Date;
}

/** Sends metric points to one OTLP/HTTP endpoint (JSON, as Render's streams are), one export per `send`. */
export interface OtlpSender {
  send(points: MetricPoint[]): Promise<void>;
  close(): Promise<void>;
}

/** The points as the SDK's metric data, one per name: exactly the points given (no SDK state to retain old series). */
function metricData(points: MetricPoint[]): MetricData[] {
  const now = hrTime();
  const byName = new Map<string, MetricPoint[]>();
  for (const p of points) byName.set(p.name, [...(byName.get(p.name) ?? []), p]);
  return [...byName.values()].map((group) => {
    const { name, description, unit, kind } = group[0]!;
    const dataPoints = group.map((p) => ({
      startTime: p.startTime ? millisToHrTime(p.startTime.getTime()) : now,
      endTime: now,
      attributes: p.attributes,
      value: p.value,
    }));
    const descriptor = { name, description, unit, valueType: ValueType.DOUBLE };
    const temporality = AggregationTemporality.CUMULATIVE;
    return kind === 'sum'
      ? {
          descriptor,
          aggregationTemporality: temporality,
          dataPointType: DataPointType.SUM,
          dataPoints,
          isMonotonic: true,
        }
      : { descriptor, aggregationTemporality: temporality, dataPointType: DataPointType.GAUGE, dataPoints };
  });
}

/** Render's base URL (`https://otlp.example.com`) takes OTLP's metrics path; a URL that names it is kept. */
export const metricsUrl = (base: string) =>
  /\/v1\/metrics\/?$/.test(base) ? base : `${base.replace(/\/+$/, '')}/v1/metrics`;

/**
 * The official OpenTelemetry exporter (@opentelemetry/exporter-metrics-otlp-http), given the SDK's metric data built
 * from the points (their sums are kept by the caller, so ended series end). The token goes as
 * `Authorization: Bearer`, as Render sends it. Connections go through the SSRF guard (guarded-lookup.ts): a host
 * must resolve to public addresses, and a literal address must be one, unless `allowPrivate`.
 */
export function createOtlpSender(options: {
  url: string;
  token?: string;
  allowPrivate: boolean;
  timeoutMs: number;
}): OtlpSender {
  const url = new URL(metricsUrl(options.url));
  const lookup = guardedLookup(options.allowPrivate);
  const exporter = new OTLPMetricExporter({
    url: url.toString(),
    headers: options.token ? { Authorization: `Bearer ${options.token}` } : {},
    timeoutMillis: options.timeoutMs,
    httpAgentOptions: (protocol) =>
      Promise.resolve(new (protocol === 'https:' ? https : http).Agent({ keepAlive: true, lookup })),
  });
  return {
    async send(points) {
      const literal = literalAddress(url.hostname);
      if (literal && !options.allowPrivate && !isPublicAddress(literal))
        throw new Error(`refused: ${literal} is a private or reserved address`);
      const resourceMetrics = {
        resource: emptyResource(),
        scopeMetrics: [{ scope: { name: 'slipway' }, metrics: metricData(points) }],
      };
      await new Promise<void>((resolve, reject) =>
        exporter.export(resourceMetrics, (result) =>
          result.code === ExportResultCode.SUCCESS
            ? resolve()
            : reject(result.error ?? new Error('the OTLP endpoint refused the export')),
        ),
      );
    },
    close: () => exporter.shutdown().catch(() => undefined),
  };
}
