#!/bin/bash
# issue 31, lane F: BFCL auto@150 with tool_choice "required", seed 1
set -x
R=bench/results/quality31
nice -n 10 .venv/bin/python bench/quality.py --tasks bfcl --strategies auto --budgets 150 --no-references --tool-choice required --seeds 1 --json $R/bfcl-auto150-required-seed1.json
