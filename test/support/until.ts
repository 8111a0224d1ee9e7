/**
 * Waits, a few milliseconds at a time, until the server (or the database) has reached the state under test:
 * no sleep can guess when a loaded machine gets there. Only the test's timeout bounds the wait.
 */
export async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}
