// A job's event history, followed live while the page is open.
import { useEffect, useState } from 'react';
import { followJobEvents } from '../../api/job-events.ts';
import { emptyHistory, type JobHistory } from '../../api/job-history.ts';

/** `round` follows the job again from its first event when it changes (a resumed job, whose stream had ended paused). */
export function useJobHistory(jobId: string, round = 0): { history: JobHistory; error: string | undefined } {
  const [history, setHistory] = useState<JobHistory>(emptyHistory);
  const [error, setError] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    setHistory(emptyHistory());
    followJobEvents(jobId, controller.signal, setHistory).catch((err: Error) => {
      if (!controller.signal.aborted) setError(err.message);
    });
    return () => controller.abort();
  }, [jobId, round]);
  return { history, error };
}
