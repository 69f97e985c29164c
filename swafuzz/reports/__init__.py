"""Reports: case bundles, the per-case JSONL log, the Markdown summary and kill matrix, and
deduplication of findings by signature. Reports record verdicts; they never decide pass/fail."""
