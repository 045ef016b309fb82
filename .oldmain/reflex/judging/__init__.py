"""Model-graded scoring and the reasoning-model templates: judge, parsing, pairwise, reasoning."""
