"""The data layer: datasets and their readers, seeded splits, prompt files, pipelines, language."""
