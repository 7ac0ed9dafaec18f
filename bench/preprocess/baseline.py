"""Baseline for bench/preprocess: the Hugging Face `datasets` library doing the same work as our
POST /datasets/process — load the CSV, map the same template to ChatML messages, split 90/10 with
seed 42, write each split as JSONL. Prints one JSON line: rows, seconds, peak RSS."""
import json
import resource
import sys
import time

from datasets import load_dataset

csv_path, out_dir = sys.argv[1], sys.argv[2]
start = time.perf_counter()
ds = load_dataset("csv", data_files=csv_path, split="train")


def to_chat(row):
    return {
        "messages": [
            {"role": "system", "content": "You are a helpful support agent."},
            {"role": "user", "content": f"Customer asked: {row['question']}\nContext: {row['context']}"},
            {"role": "assistant", "content": row["answer"]},
        ]
    }


mapped = ds.map(to_chat, remove_columns=ds.column_names)
splits = mapped.train_test_split(test_size=0.1, seed=42)
splits["train"].to_json(f"{out_dir}/train.jsonl")
splits["test"].to_json(f"{out_dir}/test.jsonl")
seconds = time.perf_counter() - start
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"rows": len(ds), "seconds": seconds, "peak_rss_mb": peak_kb / 1024}))
