// Credentials a job needs at run time (hub_token, tracker api_key), held in this process's memory only:
// never in a row, a spec file or a log. The API puts them at submit, the worker takes them when the job
// starts. A restart loses them: a queued job that needed one then fails saying to resubmit with the token.
export interface JobSecretValues {
  hubToken?: string;
  trackerApiKey?: string;
}

export class JobSecrets {
  private readonly byJob = new Map<string, JobSecretValues>();

  put(jobId: string, secrets: JobSecretValues): void {
    if (secrets.hubToken || secrets.trackerApiKey) this.byJob.set(jobId, secrets);
  }

  take(jobId: string): JobSecretValues | undefined {
    const secrets = this.byJob.get(jobId);
    this.byJob.delete(jobId);
    return secrets;
  }

  drop(jobId: string): void {
    this.byJob.delete(jobId);
  }
}
