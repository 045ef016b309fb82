"""strategies/_merge.py: GEPA candidates and the merge of two lineages (in a whole run:
test_gepa.py)."""

from __future__ import annotations

from reflex_strategies._merge import Candidate, find_merge


def test_merge_combines_lineages_that_changed_different_components() -> None:
    seed = Candidate(0, {"role": "r0", "format": "f0"}, (), (), "seed", 0)
    a = Candidate(1, {"role": "r1", "format": "f0"}, (0,), ("role",), "reflection", 1)
    b = Candidate(2, {"role": "r0", "format": "f2"}, (0,), ("format",), "reflection", 2)
    clash = Candidate(3, {"role": "r3", "format": "f0"}, (0,), ("role",), "reflection", 3)
    scores = {"0": {"x": 0.1}, "1": {"x": 0.6}, "2": {"x": 0.5}, "3": {"x": 0.9}}
    found = find_merge([seed, a, b, clash], scores, set())
    assert found is not None
    first, second, merged, changed = found
    assert (first.id, second.id) == (2, 3)  # best summed score first; 1 and 3 both changed role
    assert merged == {"role": "r3", "format": "f2"} and changed == ["format", "role"]
    assert find_merge([seed, a, b, clash], scores, {(2, 3), (1, 2)}) is None
    assert find_merge([seed, a], scores, set()) is None  # a descends from seed
