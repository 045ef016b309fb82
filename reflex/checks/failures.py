"""Why a tool-call or structured-output answer failed: one kind per sample, read from objectives.

The ``tool_call`` and ``json_match`` metrics score an answer in steps and record each step as an
objective on the sample (``tool_call.format``, ``tool_call.function``, ``tool_call.exact``;
``json_match.parse``, ``json_match.schema``, ``json_match.fields``, ``json_match.exact``).
:func:`failure_kind` names the first step a failing answer missed:

=======================  ==================================================  ==============
kind                     objectives                                          what it calls for
=======================  ==================================================  ==============
``no tool call``         ``tool_call.format`` 0, the answer holds no call     a format rule
``unwanted tool call``   ``tool_call.format`` 0, the answer calls anyway      a format rule
``wrong function``       ``tool_call.function`` below 1                      a tool-selection rule
``wrong arguments``      the right functions, ``tool_call.exact`` 0          demos
``not JSON``             ``json_match.parse`` 0                              a format rule
``schema-invalid``       ``json_match.schema`` 0                             a format rule
``wrong fields``         valid JSON, ``json_match.exact`` 0                  demos
=======================  ==================================================  ==============

On a label task an answer outside the label set is a failure of its own, read from the answer
and the labels (:func:`label_failure`): ``near-miss label`` when it nearly is one of them
(``sports`` for ``sport``: :func:`reflex.checks.confusion.near_miss`), ``off label`` otherwise;
both call for a format rule (the label list), so they are in ``FORMAT_FAILURES`` too.

A sample the metrics score in full (``exact`` 1), or one no such metric scored, has no kind
(None). The function is pure: it reads the sample only, so strategies, reports and plugins
classify the same rows the same way. Reflective strategies show the kind per row
(``failure: wrong function``); ``auto`` and the reasoning-free strategies count the kinds
(:func:`failure_counts`) to pick what to try (docs/tool-calls-and-json.md, "Failure kinds").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from reflex.checks.confusion import near_miss, normalise_label
from reflex.result import Sample
from reflex.toolcalls import parse_answer

__all__ = [
    "FORMAT_FAILURES",
    "NEAR_MISS_LABEL",
    "NOT_JSON",
    "OFF_LABEL",
    "NO_TOOL_CALL",
    "SCHEMA_INVALID",
    "UNWANTED_TOOL_CALL",
    "VALUE_FAILURES",
    "WRONG_ARGUMENTS",
    "WRONG_FIELDS",
    "WRONG_FUNCTION",
    "failure_counts",
    "failure_kind",
    "label_failure",
]

NO_TOOL_CALL = "no tool call"
UNWANTED_TOOL_CALL = "unwanted tool call"
WRONG_FUNCTION = "wrong function"
WRONG_ARGUMENTS = "wrong arguments"
NOT_JSON = "not JSON"
SCHEMA_INVALID = "schema-invalid"
WRONG_FIELDS = "wrong fields"
NEAR_MISS_LABEL = "near-miss label"
OFF_LABEL = "off label"

# Kinds that a rule about the answer's shape addresses, and kinds about its values (demos).
FORMAT_FAILURES = frozenset(
    {NO_TOOL_CALL, UNWANTED_TOOL_CALL, NOT_JSON, SCHEMA_INVALID, NEAR_MISS_LABEL, OFF_LABEL}
)
VALUE_FAILURES = frozenset({WRONG_ARGUMENTS, WRONG_FIELDS})


def failure_kind(sample: Sample) -> str | None:
    """The kind of ``sample``'s tool-call or JSON failure (see the module docstring), or None
    when it did not fail that way (scored in full, or not scored by ``tool_call`` /
    ``json_match``)."""
    got = sample.objectives
    if "tool_call.format" in got and got.get("tool_call.exact", 0.0) < 1.0:
        if got["tool_call.format"] <= 0.0:
            return UNWANTED_TOOL_CALL if parse_answer(sample.output)[1] else NO_TOOL_CALL
        if got.get("tool_call.function", 0.0) < 1.0:
            return WRONG_FUNCTION
        return WRONG_ARGUMENTS
    if "json_match.parse" in got and got.get("json_match.exact", 0.0) < 1.0:
        if got["json_match.parse"] <= 0.0:
            return NOT_JSON
        if got.get("json_match.schema", 1.0) <= 0.0:
            return SCHEMA_INVALID
        return WRONG_FIELDS
    if got.get("json_match.schema", 1.0) <= 0.0:  # the right fields, outside the schema
        return SCHEMA_INVALID
    return None


def failure_counts(samples: Iterable[Sample]) -> Counter[str]:
    """How many of ``samples`` failed in each kind (kinds that never occur are absent)."""
    return Counter(kind for s in samples if (kind := failure_kind(s)) is not None)


def label_failure(output: str, labels: Sequence[str]) -> str | None:
    """``near-miss label`` or ``off label`` when ``output`` is none of ``labels`` (answer and
    labels compared as exact_match compares them, :func:`reflex.checks.confusion.normalise_label`),
    else None."""
    known = [normalise_label(label) for label in labels]
    if not known or normalise_label(output) in known:
        return None
    return NEAR_MISS_LABEL if near_miss(output, known) is not None else OFF_LABEL
