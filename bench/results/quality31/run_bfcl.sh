#!/bin/bash
# issue 31 measurement, BFCL simple tool-call task (run from the worktree root)
set -x
Q="nice -n 10 .venv/bin/python bench/quality.py --tasks bfcl"
R=bench/results/quality31
$Q --strategies auto --budgets 150 --seeds 0 --json $R/bfcl-auto150-seed0.json
$Q --strategies auto --budgets 150 --seeds 1 --json $R/bfcl-auto150-seed1.json
