// A view redrawn in place while something moves (uploads being ingested, an evaluation run), for a
// terminal. With --json it draws on stderr and clears itself at the end, so stdout stays JSON.
import { render } from 'ink';
import type { ReactElement } from 'react';

export interface LiveView {
  update(): void;
  finish(): Promise<void>;
}

/** Renders `view()` on `stream` now and again on each `update()`; `finish()` draws the last state and stops. */
export function renderLiveView(stream: NodeJS.WriteStream, view: () => ReactElement, json: boolean): LiveView {
  const instance = render(view(), { stdout: stream, patchConsole: false, exitOnCtrlC: false });
  return {
    update: () => instance.rerender(view()),
    finish: async () => {
      instance.rerender(view());
      if (json) instance.clear();
      instance.unmount();
      await instance.waitUntilExit();
    },
  };
}
