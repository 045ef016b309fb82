"""Built-in strategy plugins (import name ``reflex_strategies``), one module per strategy."""
