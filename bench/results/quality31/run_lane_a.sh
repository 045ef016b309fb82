#!/bin/bash
# issue 31, second part (lane A): after the BFCL auto@150 seed 0 run (pid $1) ends
set -x
while kill -0 $1 2>/dev/null; do sleep 10; done
R=bench/results/quality31
nice -n 10 .venv/bin/python bench/quality.py --tasks bfcl --strategies "" --no-bare --seeds 0 --json $R/bfcl-handwritten-seed0.json
nice -n 10 .venv/bin/python bench/quality.py --tasks extraction --strategies auto --budgets 450 --patience 8 --seeds 0 --no-references --json $R/extraction-auto450p8-seed0.json
