"""W&B adapter (WandbCallback and its CLI options). Filled in by the MLflow/W&B issue."""
