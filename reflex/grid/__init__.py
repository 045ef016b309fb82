"""The compare grid: each strategy x seed x dataset at one metric-call budget, as a table.

It sits above the builder (:mod:`reflex.optimizer`): each cell is a configured
:class:`~reflex.optimizer.PromptOptimizer` run; :mod:`reflex.grid.executors` runs the cells here
or on a Ray cluster, :mod:`reflex.grid.compare` builds and summarizes the grid.
"""
