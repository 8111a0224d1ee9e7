/** A timestamp column as the API shows it: ISO 8601 in UTC, or null. */
export const iso = (value: Date | null | undefined): string | null => (value ? value.toISOString() : null);
