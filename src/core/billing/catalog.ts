import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/**
 * What every plan costs, in integer minor units of `currency` (cents for usd). Monthly prices are for a 30-day month
 * and are prorated by the second, as Render bills. docs/observability.md, "Cost": the defaults and how to replace them.
 */
export interface PriceCatalog {
  version: string;
  currency: string;
  /** A service instance's price per month, by plan. */
  services: Record<string, number>;
  postgres: Record<string, number>;
  keyValue: Record<string, number>;
  /** Build minutes beyond `includedPerMonth` (per workspace), per 1,000 minutes. */
  buildMinutes: { includedPerMonth: number; perThousand: number };
  /** Router bandwidth beyond `includedGBPerMonth` (per workspace, decimal GB), per GB. */
  bandwidth: { includedGBPerMonth: number; perGB: number };
}

/** Render's public list prices in US cents, as its pricing pages gave them (docs/observability.md, "Cost", gives the date). */
export const DEFAULT_CATALOG: PriceCatalog = {
  version: 'render-list-prices-2025-09',
  currency: 'usd',
  services: {
    free: 0,
    starter: 700,
    starter_plus: 1500,
    standard: 2500,
    standard_plus: 5000,
    pro: 8500,
    pro_plus: 17500,
    pro_max: 22500,
    pro_ultra: 45000,
  },
  postgres: {
    free: 0,
    basic_256mb: 600,
    basic_1gb: 1900,
    basic_4gb: 7500,
    pro_4gb: 5500,
    pro_8gb: 10000,
    pro_16gb: 20000,
    pro_32gb: 40000,
    pro_64gb: 80000,
    // Legacy plans, still billed for the databases that have them.
    starter: 700,
    standard: 2000,
    pro: 9500,
    pro_plus: 18500,
  },
  keyValue: { free: 0, starter: 1000, standard: 3200, pro: 13500, pro_plus: 25000 },
  buildMinutes: { includedPerMonth: 500, perThousand: 500 },
  bandwidth: { includedGBPerMonth: 100, perGB: 30 },
};

const isMinor = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Checks a catalog read from a file; every problem is named with its field. */
export function checkCatalog(raw: unknown, source: string): PriceCatalog {
  const problems: string[] = [];
  const c = (raw ?? {}) as Record<string, unknown>;
  const table = (name: string) => {
    const t = c[name];
    if (!t || typeof t !== 'object' || Array.isArray(t))
      return void problems.push(`${name} must be a map of plan: price`);
    for (const [plan, price] of Object.entries(t))
      if (!isMinor(price))
        problems.push(`${name}.${plan} must be a whole number of minor units (cents), got ${JSON.stringify(price)}`);
  };
  if (typeof c.version !== 'string' || !c.version) problems.push('version must be a non-empty string');
  if (typeof c.currency !== 'string' || !/^[a-z]{3}$/.test(c.currency))
    problems.push('currency must be an ISO code such as usd');
  for (const name of ['services', 'postgres', 'keyValue']) table(name);
  const pair = (name: string, keys: [string, string]) => {
    const p = c[name] as Record<string, unknown> | undefined;
    for (const key of keys)
      if (!isMinor(p?.[key])) problems.push(`${name}.${key} must be a whole number, got ${JSON.stringify(p?.[key])}`);
  };
  pair('buildMinutes', ['includedPerMonth', 'perThousand']);
  pair('bandwidth', ['includedGBPerMonth', 'perGB']);
  if (problems.length) throw new Error(`SLIPWAY_PRICE_CATALOG ${source}: ${problems.join('; ')}`);
  return c as unknown as PriceCatalog;
}

/** The catalog: the file SLIPWAY_PRICE_CATALOG names (YAML or JSON), else the defaults. */
export function loadCatalog(file: string | undefined): PriceCatalog {
  if (!file) return DEFAULT_CATALOG;
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`SLIPWAY_PRICE_CATALOG ${file}: ${(err as Error).message.split('\n')[0]}`);
  }
  return checkCatalog(raw, file);
}
