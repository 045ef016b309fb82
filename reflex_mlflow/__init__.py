"""MLflow adapter (MLflowCallback and its CLI options). Filled in by the MLflow/W&B issue."""
