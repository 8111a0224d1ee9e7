import type { Client } from 'pg';

/** The backend process id of a client's connection, for watching its statements from another connection. */
export async function backendPid(client: Client): Promise<number> {
  return (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
}

/** Whether backend `pid`'s statement is waiting on a lock now, as `observer` (another connection) sees it. */
export async function waitsOnLock(observer: Client, pid: number): Promise<boolean> {
  const { rows } = await observer.query<{ wait: string | null }>('select wait_event_type as wait from pg_stat_activity where pid = $1', [pid]);
  return rows[0]?.wait === 'Lock';
}
