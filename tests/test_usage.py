"""Token, call and cost ledgers by role (reflex/models/usage.py): totals, an unknown cost never
shown as zero, prices given by the user, and the round trip through a checkpoint."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from reflex.models.litellm_call import Completion
from reflex.models.usage import Ledger, Usage, cost_text, known_cost, priced


def test_the_ledger_keeps_each_role_apart_and_totals_them() -> None:
    ledger = Ledger()
    ledger.add_call("task", 100, 10, 0.002)
    ledger.add_call("task", 50, 5, None)  # LiteLLM could not price it
    ledger.add_call("judge", 20, 2, 0.001)
    ledger.add_cache_hit("task", cost=0.004)
    ledger.add_retry("reasoning")
    task = ledger.by_role["task"]
    assert (task.calls, task.tokens, task.cost_unknown, task.cache_hits) == (2, 165, 1, 1)
    assert task.cached_cost == 0.004  # saved, not spent
    total = ledger.total()
    assert (total.calls, total.tokens, total.retries) == (3, 187, 1)
    assert round(total.cost, 6) == 0.003 and total.cost_unknown == 1


def test_concurrent_calls_are_counted_exactly() -> None:
    ledger = Ledger()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: ledger.add_call("task", 3, 1, 0.5), range(400)))
    usage = ledger.by_role["task"]
    assert (usage.calls, usage.tokens, usage.cost) == (400, 1600, 200.0)


def test_an_unpriced_run_has_an_unknown_cost_not_a_zero_one() -> None:
    assert known_cost(0.0, calls=3, unknown=3) is None
    assert known_cost(0.5, calls=3, unknown=1) == 0.5
    assert known_cost(0.0, calls=0, unknown=0) == 0.0
    assert cost_text(0.0, 37, 37) == "unpriced (37 calls)"
    assert cost_text(0.0123, 6, 1) == "$0.0123 + unpriced (1 call)"
    assert cost_text(0.0, 0, 0) == "$0.0000"
    assert Usage(calls=2, cost_unknown=2).to_dict()["cost"] is None


def test_a_user_price_replaces_litellm_s() -> None:
    answer = Completion("ok", 1_000, 500, cost=None, cached=False, attempts=1)
    assert priced(answer, None) is answer  # no --price: as LiteLLM priced it
    assert priced(answer, (0.2, 0.6)).cost == (1_000 * 0.2 + 500 * 0.6) / 1e6


def test_a_checkpoint_s_ledger_reads_back_the_same() -> None:
    ledger = Ledger()
    ledger.add_call("task", 7, 3, None)
    ledger.add_call("reasoning", 40, 60, 0.01)
    ledger.add_deployment("task", "east")
    ledger.add_retries("task", 2)
    saved = json.loads(json.dumps(ledger.to_dict()))  # as checkpoint.json holds it
    assert saved["task"]["cost"] is None and saved["deployments"] == {"task:east": 1}
    again = Ledger()
    again.restore(saved)
    assert again.to_dict() == ledger.to_dict()
    assert again.by_role["task"] == ledger.by_role["task"]
