import ajvFormats from 'ajv-formats';

/**
 * The dates the API takes (docs/api.md, "API conventions"): RFC 3339 date-times from the Unix epoch to the end of year
 * 9999. ajv-formats' `date-time` alone let through year 0 (Postgres has none: a 500), a leap second (23:59:60, no
 * JavaScript Date: a 500) and, through an offset, year 10000.
 */
export const EARLIEST_DATE = '1970-01-01T00:00:00Z';
export const LATEST_DATE = '9999-12-31T23:59:59.999Z';
const [EARLIEST_MS, LATEST_MS] = [Date.parse(EARLIEST_DATE), Date.parse(LATEST_DATE)];
export const DATE_RANGE_MESSAGE = `must be an RFC 3339 date-time from ${EARLIEST_DATE} to 9999-12-31T23:59:59Z`;

// ajv-formats is CommonJS: its module object is the function.
const rfc3339 = (ajvFormats as unknown as typeof ajvFormats.default).get('date-time') as {
  validate: (value: string) => boolean;
};

export function isAcceptedDate(value: string): boolean {
  if (!rfc3339.validate(value)) return false;
  const ms = Date.parse(value);
  return ms >= EARLIEST_MS && ms <= LATEST_MS; // NaN (a leap second) is neither
}
