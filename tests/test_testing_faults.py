"""reflex.testing.faults: the local endpoint's fault plan (named test_testing_faults.py: the
provider faults of a whole run are tests/reliability/test_faults.py)."""

from __future__ import annotations

import pytest

from reflex.testing.faults import EXTRA_KINDS, FAULT_KINDS, PERMANENT_KINDS, FaultPlan


def test_no_rate_answers_every_request() -> None:
    plan = FaultPlan()
    assert [plan.choose(f"body{i}", 0, i) for i in range(50)] == [None] * 50


def test_the_draw_depends_on_the_body_and_attempt_not_on_arrival() -> None:
    plan = FaultPlan(rate=0.5, seed=7)
    draws = [plan.choose(f"body{i}", 0, arrival=i) for i in range(200)]
    assert draws == [plan.choose(f"body{i}", 0, arrival=1000 + i) for i in range(200)]
    assert draws == [FaultPlan(rate=0.5, seed=7).choose(f"body{i}", 0, 0) for i in range(200)]
    faulted = [d for d in draws if d is not None]
    assert 60 < len(faulted) < 140 and set(faulted) <= set(FAULT_KINDS)
    # Another seed, or a retry of the same body, draws afresh.
    assert draws != [FaultPlan(rate=0.5, seed=8).choose(f"body{i}", 0, i) for i in range(200)]
    assert draws != [plan.choose(f"body{i}", 1, i) for i in range(200)]


def test_max_per_request_lets_a_retried_body_through() -> None:
    plan = FaultPlan(rate=1.0, kinds=("500",), max_per_request=2)
    assert [plan.choose("same", attempt, attempt) for attempt in range(4)] == [
        "500",
        "500",
        None,
        None,
    ]


def test_a_script_fixes_the_first_requests_in_arrival_order() -> None:
    plan = FaultPlan(script=["timeout", None, "401"])
    assert [plan.choose("x", 0, arrival) for arrival in range(4)] == ["timeout", None, "401", None]


def test_kinds_drawn_are_only_those_named() -> None:
    plan = FaultPlan(rate=1.0, kinds=("huge", "drop"))
    assert {plan.choose(f"b{i}", 0, i) for i in range(64)} == {"huge", "drop"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 1.5}, r"fault rate must be in \[0, 1\], got 1.5"),
        ({"rate": -0.1}, "fault rate"),
        ({"kinds": ("500", "teapot")}, r"unknown fault kinds \['teapot'\]"),
        ({"script": [None, "418"]}, r"unknown fault kinds \['418'\]"),
        ({"rate": 0.2, "kinds": ()}, "unknown fault kinds"),
    ],
)
def test_a_bad_plan_is_refused_when_made(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultPlan(**kwargs)  # type: ignore[arg-type]


def test_every_kind_is_known_once() -> None:
    every = (*FAULT_KINDS, *EXTRA_KINDS, *PERMANENT_KINDS)
    assert len(every) == len(set(every))
    FaultPlan(rate=0.1, kinds=every)  # all accepted
