// Loaded GGUF models kept warm between requests, with their shared contexts: least recently used first out when the
// memory budget (the models' weights) is exceeded.
import type { Llama, LlamaModel } from 'node-llama-cpp';
import { SharedContexts } from './shared-context.ts';

interface Entry {
  model: LlamaModel;
  contexts: SharedContexts;
  bytes: number;
  users: number;
}

export class ModelCache {
  private readonly entries = new Map<string, Entry>(); // insertion order = recency order (oldest first)
  private readonly loading = new Map<string, Promise<Entry>>();

  constructor(
    private readonly llama: Llama,
    readonly memoryBudgetBytes: number,
    /** How long a model's contexts stay warm after its last request. */
    private readonly contextIdleMs: number,
  ) {}

  /** The loaded paths, least recently used first. */
  get paths(): string[] {
    return [...this.entries.keys()];
  }

  /** Runs `use` with the model at `modelPath` loaded; the model is not evicted while in use. */
  async with<T>(modelPath: string, use: (model: LlamaModel, contexts: SharedContexts) => Promise<T>): Promise<T> {
    const entry = await this.acquire(modelPath);
    try {
      return await use(entry.model, entry.contexts);
    } finally {
      entry.users -= 1;
      await this.evict();
    }
  }

  async dispose(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map(unload));
  }

  private async acquire(modelPath: string): Promise<Entry> {
    let entry = this.entries.get(modelPath);
    if (!entry) {
      // Requests that come together for a model not loaded yet wait for one load (each loading its own copy would
      // hold the weights several times, and their sequences would not share contexts).
      let loading = this.loading.get(modelPath);
      if (!loading) {
        loading = this.llama.loadModel({ modelPath }).then((model) => ({ model, contexts: new SharedContexts(model, this.contextIdleMs), bytes: model.size, users: 0 }));
        this.loading.set(modelPath, loading);
        const forget = () => void this.loading.delete(modelPath);
        loading.then(forget, forget);
      }
      entry = await loading;
    }
    this.entries.delete(modelPath); // re-insert: now the most recently used
    this.entries.set(modelPath, entry);
    entry.users += 1;
    await this.evict();
    return entry;
  }

  private async evict(): Promise<void> {
    let total = [...this.entries.values()].reduce((sum, e) => sum + e.bytes, 0);
    for (const [path, entry] of this.entries) {
      if (total <= this.memoryBudgetBytes) break;
      if (entry.users > 0) continue;
      this.entries.delete(path);
      total -= entry.bytes;
      await unload(entry);
    }
  }
}

async function unload(entry: Entry): Promise<void> {
  await entry.contexts.dispose();
  await entry.model.dispose();
}
