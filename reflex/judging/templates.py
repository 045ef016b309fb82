"""The default text of every reasoning template, and migration notes per model family.

Kept apart from ``reflex.judging.reasoning`` (which looks them up by name and lets users override
them) so the prompt text reads as one document.
"""

from __future__ import annotations

__all__ = ["DEFAULT_TEMPLATES", "family", "migration_notes"]

_ANSWER_FORM = (
    "Answer exactly in this form:\n"
    "<diagnosis>what goes wrong and why</diagnosis>\n"
    "<edit>one line: what you changed</edit>\n"
    "<prompt>the full revised prompt</prompt>"
)

DEFAULT_TEMPLATES: dict[str, str] = {
    "guidance.language": (
        "The task's inputs and expected outputs are in {language}: write the prompt in "
        "{language} (keep labels and output formats exactly as the data spells them)."
    ),
    "guidance.migration": (
        "Migration: this prompt was written for {source_model} ({source_family}) and will now "
        "run on {target_model} ({target_family}). {notes}"
    ),
    "guidance.template": (
        "The prompt is a chat template: one <message role=...> block per message the model is "
        "sent. Keep every block, in the same order, and keep its placeholders {placeholders} "
        "exactly, each in its own message and as often as now: they are filled with each row's "
        "values. Rewrite only the text around them."
    ),
    "guidance.tools": (
        "The prompt starts with a <tools> section: the descriptions of the functions the model "
        "may call ({functions}), sent with each request as the tools' descriptions. Keep the "
        "section first and every <function ...> and <parameter ...> line in it exactly as it is "
        "(names, types, enums and required flags are fixed); you may rewrite the description "
        "text between those lines."
    ),
    "guidance.format": (
        "The answers must follow a JSON schema; the prompt names its fields {fields}. Keep "
        "naming every one of them: a prompt that drops the output-format instructions is refused."
    ),
    "retry": "That answer was unusable: {error}. Answer again in the required form.",
    # gepa / opro / random (issue 8): distinct names, one block.
    "gepa.system": (
        "You improve one named component of a prompt for a language model. You are shown the "
        "whole prompt, the component to rewrite, examples run with it (input, output, expected "
        "answer, score and the metric's feedback) and earlier rewrites of this component that "
        "did not help. Diagnose what goes wrong and rewrite only that component. "
        "Answer exactly in this form:\n<diagnosis>what goes wrong and why</diagnosis>\n"
        "<edit>one line: what you changed</edit>\n<prompt>the full new text of the "
        "component</prompt>"
    ),
    "gepa.reflect": (
        "The whole prompt, as the model sees it:\n<whole>\n{whole}\n</whole>\n\n"
        "Rewrite the component '{component}':\n<current>\n{current}\n</current>\n\n"
        "Its mean score on these examples: {score} (1.0 is perfect).\n\n"
        "Examples:\n{rows}\n\n"
        "Rewrites of this component that did not help (do not repeat them):\n{rejected}"
    ),
    "opro.system": (
        "You are an optimizer. You are shown instructions for a language model with the score "
        "each earned (higher is better), sorted from worst to best, and examples of the task. "
        "Write new instructions that score higher than all of them. Put each one between "
        "<prompt> and </prompt>."
    ),
    "opro.meta": (
        "Instructions tried so far, with their scores (ascending):\n{history}\n\n"
        "Examples of the task (input -> expected output):\n{exemplars}\n\n"
        "Write {count} new, different instructions that would score higher than every one "
        "above."
    ),
    "random.system": (
        "You paraphrase system prompts for a language model. Keep the task, labels and output "
        "format; vary wording, order and emphasis. Put each paraphrase between <prompt> and "
        "</prompt>."
    ),
    "random.paraphrase": (
        "Prompt:\n<current>\n{current}\n</current>\n\nWrite {count} distinct paraphrases "
        "(variant set {round})."
    ),
    # mipro (issue 33): instruction candidates grounded in the data, one call for all of them.
    "mipro.system": (
        "You write instructions (system prompts) for a language model. You are shown the "
        "current prompt, a summary of the task's data and examples of inputs with their expected "
        "outputs. Write distinct instructions that make the model answer like the expected "
        "outputs: keep the task, the labels and the output format; vary the wording, the detail "
        "and the emphasis. Put each one between <prompt> and </prompt>."
    ),
    "mipro.propose": (
        "Current prompt:\n<current>\n{current}\n</current>\n\nThe data: {summary}\n\n"
        "Examples (input -> expected output):\n{examples}\n\nWrite {count} distinct "
        "instructions."
    ),
    "iterative.system": (
        "You improve system prompts for a language model. You are shown the current prompt, "
        "examples it handled badly, and a log of earlier edits with the score change each "
        "caused. Diagnose the failures and write a complete revised prompt. " + _ANSWER_FORM
    ),
    "iterative.brief": (
        "Current prompt:\n<current>\n{current}\n</current>\n\n"
        "Its mean score on this batch: {score} (1.0 is perfect).\n\n"
        "Lowest-scoring examples:\n{rows}\n\n"
        "Edit log (edit -> score change it caused):\n{history}"
    ),
    "simba.system": (
        "You write rules for a language model's system prompt. For each example you are shown "
        "the same prompt's answers sampled several times: a better and a worse one, with their "
        "scores, or only failures. From the contrast, write short, general rules that would "
        "make the better behaviour reliable; do not quote the examples. Answer exactly in this "
        "form:\n<diagnosis>what separates the better answers from the worse</diagnosis>\n"
        "<rules>\n- one rule per line\n</rules>"
    ),
    "simba.contrast": (
        "Current prompt:\n<current>\n{current}\n</current>\n\n"
        "Rules it already has:\n{rules}\n\n"
        "Examples whose sampled answers varied in score or failed:\n{rows}"
    ),
    "structural.system": (
        "You restructure system prompts for a language model without changing what they ask "
        "for. Keep every instruction, label and format requirement; change only the layout: "
        "order, grouping, headers or tags, emphasis, step structure, length. " + _ANSWER_FORM
    ),
    "structural.freeform": (
        "Current prompt:\n<current>\n{current}\n</current>\n\n"
        "Its mean score on a train batch: {score} (1.0 is perfect).\n\n"
        "Layouts already tried on this prompt (layout -> score change on its batch):\n"
        "{tried}\n\nPropose one different layout that could score higher."
    ),
    "pdo.system": (
        "You write alternative system prompts for a language model. Each must do the same task "
        "as the base prompt and keep its labels and output format, but differ in wording, "
        "structure, emphasis or level of detail, so they can be compared head to head. "
        "Put each prompt between <prompt> and </prompt>."
    ),
    "pdo.pool": (
        "Base prompt:\n<current>\n{current}\n</current>\n\n"
        "Example inputs:\n{inputs}\n\nWrite {count} diverse alternatives."
    ),
    "pdo.mutate": (
        "This prompt won {win_rate} of its head-to-head comparisons:\n<current>\n{current}\n"
        "</current>\n\nRows where it lost (input, its output, the winner's output):\n{losses}\n\n"
        "Write one improved variant that keeps its strengths and fixes these losses, as "
        "<prompt>...</prompt>."
    ),
    # Pairwise judge (label-free pdo duels): sent to the run's judge model, not the reasoner.
    "pairwise.system": (
        "You are an impartial, strict evaluator. You are shown an input and two responses, A "
        "and B. Decide which response better satisfies these criteria:\n{rubric}\n\n"
        "Ignore the order in which the responses appear and their length unless a criterion "
        "asks for it. Reply with only <answer>A</answer>, <answer>B</answer> or "
        "<answer>tie</answer>."
    ),
    "pairwise.compare": (
        "## Input\n{input}\n\n## Response A\n{first}\n\n## Response B\n{second}\n\n"
        "Which response better satisfies the criteria: A or B? Answer A, B or tie."
    ),
    "pairwise.retry": (
        "That reply could not be used: {error}. Reply with only <answer>A</answer>, "
        "<answer>B</answer> or <answer>tie</answer>."
    ),
}

# Substring of the model name -> family; first match wins.
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("claude", "anthropic"),
    ("anthropic", "anthropic"),
    ("gpt", "openai"),
    ("openai", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("gemini", "google"),
    ("gemma", "small-open"),
    ("llama", "llama"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("qwen", "qwen"),
    ("deepseek", "deepseek"),
    ("phi", "small-open"),
    ("smollm", "small-open"),
)

_NOTES: dict[str, str] = {
    "anthropic": "Claude models follow XML-tagged sections and an explicit role well, and take "
    "long, detailed instructions literally.",
    "openai": "GPT models work well with markdown headers, short bullet constraints and an "
    "output format stated last; they tolerate terse prompts.",
    "google": "Gemini models benefit from clear headers, an explicit output format and "
    "examples of the expected answer.",
    "llama": "Llama models need short, direct instructions, the output format repeated at the "
    "end, and little nesting; they drift on long prompts.",
    "mistral": "Mistral models prefer concise instructions with the format stated plainly; "
    "avoid long system prompts with many sections.",
    "qwen": "Qwen models follow structured, numbered instructions and explicit output formats.",
    "deepseek": "DeepSeek models reason at length by default: ask for the final answer only, "
    "in an exact format.",
    "small-open": "Small open models copy surface form: keep the prompt short, put the exact "
    "output format last, and avoid abstract or nested instructions.",
}


def family(model: str) -> str:
    """The model family of a ``provider/model`` name, or ``"unknown"``."""
    name = model.lower()
    return next((fam for key, fam in _FAMILIES if key in name), "unknown")


def migration_notes(source: str, target: str) -> str:
    """Advice for moving a prompt from ``source``'s family to ``target``'s."""
    src, dst = family(source), family(target)
    if src == dst and src != "unknown":
        return "Both are the same family: keep the structure, tune only what the failures show."
    advice = _NOTES.get(dst, "Check each instruction still holds on the new model.")
    drop = _NOTES.get(src)
    habit = f" Habits tuned for the old model may not carry over: {drop}" if drop else ""
    return advice + habit
