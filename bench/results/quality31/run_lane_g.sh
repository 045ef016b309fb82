#!/bin/bash
# issue 31, lane G: extraction auto@450 with early-stopping patience 8, seed 0
set -x
R=bench/results/quality31
nice -n 10 .venv/bin/python bench/quality.py --tasks extraction --strategies auto --budgets 450 --patience 8 --seeds 0 --no-references --json $R/extraction-auto450p8-seed0.json
