// The server's side of a short-lived helper process (document parsers, OCR): started with the
// first request and stopped after `idleExitMs` without one. Modules cannot be unloaded, and a
// worker thread's memory largely stays with the process after the thread ends, so a process that
// exits is the only way an idle server holds none of a heavy library. One process serves every
// request of this server; requests go over IPC (structured clone) and replies come back by id.
import { fork, type ChildProcess } from 'node:child_process';

export interface ChildProcessClientOptions {
  /** In messages: `the ${name} process exited`. */
  name: string;
  /** The module to fork and the Node flags it needs (never the server's own: --inspect would clash). */
  entry: () => { path: string; execArgv: string[] };
  /** The process exits after this long without a request. */
  idleExitMs: number;
  /** A request taking longer stops the whole process (every pending request is rejected); default none. */
  requestTimeoutMs?: number;
}

export interface ChildProcessClient<Request extends object, Reply> {
  send(request: Request): Promise<Reply>;
  /** Stops the process now, if one runs. */
  stop(): void;
}

interface Running<Reply> {
  child: ChildProcess;
  pending: Map<number, { resolve: (reply: Reply) => void; reject: (err: Error) => void; timer: NodeJS.Timeout | null }>;
  idleTimer: NodeJS.Timeout | null;
}

export function createChildProcessClient<Request extends object, Reply>(options: ChildProcessClientOptions): ChildProcessClient<Request, Reply> {
  let current: Running<Reply> | null = null;
  let nextId = 0;

  function start(): Running<Reply> {
    const { path, execArgv } = options.entry();
    const child = fork(path, [], { execArgv, serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const proc: Running<Reply> = { child, pending: new Map(), idleTimer: null };
    child.on('message', ({ id, ...reply }: { id: number }) => {
      const task = proc.pending.get(id);
      if (!task) return;
      if (task.timer) clearTimeout(task.timer);
      proc.pending.delete(id);
      task.resolve(reply as Reply);
      if (proc.pending.size === 0) markIdle(proc);
    });
    const fail = (err: Error) => {
      if (current === proc) current = null;
      if (proc.idleTimer) clearTimeout(proc.idleTimer);
      for (const task of proc.pending.values()) {
        if (task.timer) clearTimeout(task.timer);
        task.reject(err);
      }
      proc.pending.clear();
    };
    child.on('error', (err) => {
      fail(new Error(`the ${options.name} process failed: ${err.message}`));
      child.kill();
    });
    child.on('exit', (code, signal) => fail(new Error(`the ${options.name} process exited (${signal ?? `code ${code}`})`)));
    return proc;
  }

  /** With nothing in progress the process holds no reference to the event loop (it never delays an exit). */
  function markIdle(proc: Running<Reply>) {
    proc.child.unref();
    proc.child.channel?.unref();
    proc.idleTimer = setTimeout(() => {
      if (current === proc) current = null;
      proc.child.kill();
    }, options.idleExitMs).unref();
  }

  return {
    send(request) {
      const proc = (current ??= start());
      if (proc.idleTimer) clearTimeout(proc.idleTimer);
      proc.idleTimer = null;
      proc.child.ref();
      proc.child.channel?.ref();
      const id = nextId++;
      return new Promise<Reply>((resolve, reject) => {
        const limit = options.requestTimeoutMs;
        // A stuck request would hold its caller for ever: stop the whole process (its exit rejects every pending request).
        const timer = limit
          ? setTimeout(() => {
              proc.pending.get(id)?.reject(new Error(`the ${options.name} process took longer than ${limit / 1000} s`));
              proc.pending.delete(id);
              proc.child.kill();
            }, limit)
          : null;
        proc.pending.set(id, { resolve, reject, timer });
        proc.child.send({ id, ...request }, (err) => {
          if (err) proc.child.emit('error', err);
        });
      });
    },
    stop() {
      current?.child.kill();
      current = null;
    },
  };
}
