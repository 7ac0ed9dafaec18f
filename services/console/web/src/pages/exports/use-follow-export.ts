// Following an export: it runs as a job, so GET /exports/{job_id} (a job's or a Tinker run's) is looked at every second
// until its latest export has ended. The Exports page and a Tinker run's page both follow theirs with it.
import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../../api/client.ts';
import type { ExportDetails } from '../../api/types.ts';

export interface FollowedExport {
  /** GET /exports/{job_id} as last read; its latest_export is the one followed. */
  current: ExportDetails | undefined;
  /** Whether it is still looked at. */
  following: boolean;
  /** Why it could not be read (the API's sentence); following stops. */
  error: string | undefined;
  /** Looks at `jobId`'s exports until `exportId` (one just started) has ended, or without it, until whichever is latest
   *  has (none, or one that ended, stops at the first look). */
  follow: (jobId: string, exportId?: string) => void;
  /** Forgets what was read and stops following. */
  reset: () => void;
}

/** `onEnded` is called once the export followed by id has ended (a list of files may have a new one). */
export function useFollowExport(onEnded?: () => void): FollowedExport {
  const [following, setFollowing] = useState<{ jobId: string; exportId: string | undefined }>();
  const [current, setCurrent] = useState<ExportDetails>();
  const [error, setError] = useState<string>();
  const ended = useRef(onEnded);
  ended.current = onEnded;

  useEffect(() => {
    if (!following) return;
    const controller = new AbortController();
    const look = async () => {
      try {
        const details = await api<ExportDetails>('export', `/exports/${encodeURIComponent(following.jobId)}`, { signal: controller.signal });
        setCurrent(details);
        const latest = details.latest_export;
        const done = following.exportId === undefined ? latest?.status !== 'running' : latest?.export_id === following.exportId && latest.status !== 'running';
        if (done) {
          setFollowing(undefined);
          if (following.exportId !== undefined) ended.current?.();
          return;
        }
      } catch (err) {
        if (controller.signal.aborted) return;
        setError((err as Error).message);
        setFollowing(undefined);
        return;
      }
      timer = setTimeout(() => void look(), 1000);
    };
    let timer = setTimeout(() => void look(), following.exportId === undefined ? 0 : 300);
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [following]);

  const follow = useCallback((jobId: string, exportId?: string) => {
    setError(undefined);
    setFollowing({ jobId, exportId });
  }, []);
  const reset = useCallback(() => {
    setFollowing(undefined);
    setCurrent(undefined);
    setError(undefined);
  }, []);
  return { current, following: following !== undefined, error, follow, reset };
}
