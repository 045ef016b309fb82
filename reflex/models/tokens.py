"""Counting tokens without a call: the prompt-length guard and the dry-run plan's estimates.

One tokenizer for every model: OpenAI's ``cl100k_base``, the copy LiteLLM ships (its
``TIKTOKEN_CACHE_DIR``), so counting never reaches the network. Other families' tokenizers
differ (Llama, Qwen and Claude count roughly 0.9x to 1.2x as many tokens for English text),
so a count is the same yardstick for every candidate of a run, not the provider's bill.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["TOKENIZER", "count_tokens"]

TOKENIZER = "cl100k_base"


@functools.cache
def _encoding() -> Any:
    from reflex.models.client import load_litellm  # with the local provider, as a run loads it

    load_litellm()  # sets TIKTOKEN_CACHE_DIR to LiteLLM's bundled tokenizer files first
    from litellm.litellm_core_utils.default_encoding import encoding

    return encoding


@functools.lru_cache(maxsize=4096)
def count_tokens(text: str) -> int:
    """The tokens of ``text`` in :data:`TOKENIZER` (special-token text counted as plain text)."""
    if not text:
        return 0
    return len(_encoding().encode(text, disallowed_special=()))
