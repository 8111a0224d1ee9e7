/** A timestamp column as the API shows it: ISO 8601 in UTC; null for a nullable column without a value. */
export function iso(value: Date): string;
export function iso(value: Date | null | undefined): string | null;
export function iso(value: Date | null | undefined): string | null {
  return value ? value.toISOString() : null;
}
