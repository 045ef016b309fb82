"""Executing a run: engine, session, strategy context, evaluation, budget, run store, resume;
and re-evaluating recorded runs (gate, export). The compare grid is reflex.grid, above the builder.
"""
