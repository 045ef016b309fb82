#!/bin/bash
# issue 31, lane D: BFCL auto@150 with tool_choice "required", seed 0
set -x
R=bench/results/quality31
nice -n 10 .venv/bin/python bench/quality.py --tasks bfcl --strategies auto --budgets 150 --no-hand-written --tool-choice required --seeds 0 --json $R/bfcl-auto150-required-seed0.json
