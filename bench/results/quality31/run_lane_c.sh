#!/bin/bash
# issue 31, third part (lane C): BFCL bare prompt with tool_choice "required" (one function per
# row: the embedded model's grammar-constrained named choice), seed 0 test rows
set -x
R=bench/results/quality31
nice -n 10 .venv/bin/python bench/quality.py --tasks bfcl --strategies "" --no-hand-written --tool-choice required --seeds 0 --json $R/bfcl-bare-required-seed0.json
