"""Built-in metric plugins (import name ``reflex_metrics``), one module per metric."""
