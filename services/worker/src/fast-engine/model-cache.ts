// Loaded GGUF models kept warm between requests: least recently used first out when the memory budget is exceeded.
import type { Llama, LlamaModel } from 'node-llama-cpp';

interface Entry {
  model: LlamaModel;
  bytes: number;
  users: number;
}

export class ModelCache {
  private readonly entries = new Map<string, Entry>(); // insertion order = recency order (oldest first)

  constructor(
    private readonly llama: Llama,
    readonly memoryBudgetBytes: number,
  ) {}

  /** The loaded paths, least recently used first. */
  get paths(): string[] {
    return [...this.entries.keys()];
  }

  /** Runs `use` with the model at `modelPath` loaded; the model is not evicted while in use. */
  async with<T>(modelPath: string, use: (model: LlamaModel) => Promise<T>): Promise<T> {
    const entry = await this.acquire(modelPath);
    try {
      return await use(entry.model);
    } finally {
      entry.users -= 1;
      await this.evict();
    }
  }

  async dispose(): Promise<void> {
    const models = [...this.entries.values()].map((e) => e.model);
    this.entries.clear();
    await Promise.all(models.map((m) => m.dispose()));
  }

  private async acquire(modelPath: string): Promise<Entry> {
    let entry = this.entries.get(modelPath);
    if (entry) {
      this.entries.delete(modelPath); // re-insert: now the most recently used
    } else {
      const model = await this.llama.loadModel({ modelPath });
      entry = { model, bytes: model.size, users: 0 };
    }
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
      await entry.model.dispose();
    }
  }
}
