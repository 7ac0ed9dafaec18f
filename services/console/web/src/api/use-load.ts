// Loads something when a page opens (and again on reload()), keeping the API's sentence when it fails; and calls
// something every few seconds while a condition holds (a list reloaded while one of its items runs).
import { useCallback, useEffect, useState } from 'react';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setLoading(true);
    load(controller.signal).then(
      (value) => {
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (err: Error) => {
        if (controller.signal.aborted) return;
        setError(err.message);
        setLoading(false);
      },
    );
    return () => controller.abort();
    // `load` is a new closure at each render: the caller's deps say when what it loads changes.
  }, [...deps, generation]);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data, error, loading, reload };
}

/** Calls `tick` every `ms` while `active` (a page looking again while what it shows can still change). */
export function useEvery(ms: number, active: boolean, tick: () => void): void {
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(tick, ms);
    return () => clearInterval(timer);
  }, [ms, active, tick]);
}
