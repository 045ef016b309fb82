"""Evidence about a run: paired statistics, leakage checks, the sealed audit record, prompt
versions.
"""
