"""The model channel: one client per run (cache, ledger, retries, concurrency) over LiteLLM."""
