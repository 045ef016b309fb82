#!/bin/bash
# issue 31 measurement, extraction task (run from the worktree root)
set -x
Q="nice -n 10 .venv/bin/python bench/quality.py --tasks extraction"
R=bench/results/quality31
$Q --strategies auto --budgets 150 --seeds 0 --json $R/extraction-auto150-seed0.json
$Q --strategies fewshot --budgets 150 --seeds 0 --no-references --json $R/extraction-fewshot150-seed0.json
$Q --strategies auto --budgets 150 --seeds 1 --json $R/extraction-auto150-seed1.json
$Q --strategies auto --budgets 450 --seeds 0 --no-references --json $R/extraction-auto450-seed0.json
