#!/bin/bash
# issue 31, second part (lane B): after the extraction fewshot@150 seed 0 run (pid $1) ends
set -x
while kill -0 $1 2>/dev/null; do sleep 10; done
R=bench/results/quality31
nice -n 10 .venv/bin/python bench/quality.py --tasks extraction --strategies auto --budgets 150 --seeds 1 --json $R/extraction-auto150-seed1.json
nice -n 10 .venv/bin/python bench/quality.py --tasks extraction --strategies "" --no-bare --seeds 0 --json $R/extraction-handwritten-seed0.json
