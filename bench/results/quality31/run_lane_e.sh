#!/bin/bash
# issue 31, lane E: after lane B (pid $1): BFCL bare prompt with tool_choice "required", seed 1
set -x
while kill -0 $1 2>/dev/null; do sleep 10; done
R=bench/results/quality31
nice -n 10 .venv/bin/python bench/quality.py --tasks bfcl --strategies "" --no-hand-written --tool-choice required --seeds 1 --json $R/bfcl-bare-required-seed1.json
