"""A two-step pipeline: the task model answers, then code keeps only the answer itself.

``aevyra-reflex optimize --pipeline-file pipeline.py`` imports this file and calls ``run`` once
per input. ``call`` sends messages to the task model through the run's client (cached, counted,
rate-limited); ``step=`` names the call in the trace stored with each scored sample.
"""

from __future__ import annotations

from collections.abc import Callable

from reflex.data.pipeline import Prompt, Trace


def run(prompt: Prompt, input: str, call: Callable[..., str]) -> Trace:
    trace = Trace()
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": input}]
    draft = trace.step("answer", input, call(messages))
    # Plain code is a step too: models like to wrap a short answer in a sentence.
    first_line = draft.strip().splitlines()[0] if draft.strip() else ""
    answer = trace.step("clean", draft, first_line.strip().strip('"').rstrip("."))
    return trace.finish(answer)
