"""Prompts made of named components, and the files they are read from and written to.

A plain prompt is one component, ``system``. A multi-component prompt maps names to texts; the
model sees them assembled by a template (``{name}`` placeholders; unknown braces are left as
they are) or, without one, joined in order with blank lines. The engine works on the assembled
text; strategies that understand components (``gepa``) edit them one at a time.

A chat template (MLflow's chat-prompt form: a list of ``{"role", "content"}`` messages with
``{{variable}}`` placeholders, :mod:`reflex.data.templates`) is a multi-component prompt too:
one component per message (named by its role, ``role_N`` when a role repeats), assembled into
the template's string form; its format is "chat".

Files: ``.md`` / ``.txt`` (one component), ``.json`` / ``.yaml`` / ``.yml`` / ``.toml``
(a mapping of name -> text; the reserved key ``_template`` holds the template; a JSON or YAML
list is a chat template), or a directory
of ``.md`` files (one component per file, named by its stem, in name order; an optional
``_template.md`` holds the template).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reflex.data.demos import check_chat_demos, saved_template
from reflex.data.files import atomic_write_text, file_problem
from reflex.data.templates import (
    component_names,
    messages_from_data,
    parse_template,
    template_text,
    variables_of,
)
from reflex.data.tool_text import strip_tools_section, tools_template
from reflex.errors import ConfigurationError

__all__ = [
    "SINGLE",
    "TEMPLATE_KEY",
    "PromptLike",
    "PromptSpec",
    "chat_spec",
    "is_components_path",
    "load_prompt_file",
    "prompt_spec",
    "read_prompt",
    "spec_from_mapping",
    "with_tool_descriptions",
    "write_prompt_file",
]

SINGLE = "system"
TEMPLATE_KEY = "_template"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-]*)\}")
_MAPPING_FORMATS = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml"}


@dataclass(frozen=True)
class PromptSpec:
    """Named prompt components plus the template that assembles them.

    ``fmt`` records where the spec came from ("text", "json", "yaml", "toml" or "dir") so the
    best prompt can be written back in the same shape. ``source``: the registry URI it was read
    from, pinned to a version (``prompts:/cat/3`` for ``prompts:/cat@production``), else None.
    """

    components: Mapping[str, str]
    template: str | None = None
    fmt: str = field(default="text", compare=False)
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.components:
            raise ConfigurationError("a prompt needs at least one component")

    @classmethod
    def single(cls, text: str) -> PromptSpec:
        """A plain prompt: one component named ``system``."""
        return cls({SINGLE: text})

    @property
    def names(self) -> list[str]:
        return list(self.components)

    @property
    def is_single(self) -> bool:
        return list(self.components) == [SINGLE] and self.template is None

    def render(self, components: Mapping[str, str] | None = None) -> str:
        """The assembled prompt text for ``components`` (default: this spec's own)."""
        parts = dict(self.components if components is None else components)
        if self.template is None:
            return "\n\n".join(text.strip() for text in parts.values() if text.strip())
        return _FIELD.sub(lambda m: parts[m[1]] if m[1] in parts else m[0], self.template).strip()

    @property
    def messages(self) -> list[dict[str, str]] | None:
        """The chat template's messages (placeholders kept), or None for a text prompt."""
        return parse_template(strip_tools_section(self.render()))

    @property
    def variables(self) -> list[str]:
        """The chat template's variable names in order of first use; [] for a text prompt."""
        messages = self.messages
        return variables_of(messages) if messages is not None else []

    def components_of(
        self, text: str, edited: Mapping[str, str] | None = None
    ) -> dict[str, str] | None:
        """The named components of ``text``, a candidate of this prompt: ``edited`` when a
        strategy edited components, else ``text`` as the one component of a plain prompt; None
        when a multi-part prompt was edited as one text."""
        if edited is not None:
            return dict(edited)
        return {SINGLE: text} if self.is_single else None

    def replace(self, components: Mapping[str, str]) -> PromptSpec:
        """The same template and format with other component texts (names must match)."""
        if list(components) != list(self.components):
            raise ValueError(f"components {list(components)} != {list(self.components)}")
        return PromptSpec(dict(components), self.template, self.fmt, self.source)


# Every form a prompt is accepted in (see prompt_spec).
PromptLike = str | Path | PromptSpec | Mapping[str, str] | Sequence[Mapping[str, str]]


def _check(where: str, components: Mapping[str, object], template: object) -> PromptSpec:
    if not components:
        raise ConfigurationError(f"{where}: no prompt components found")
    out: dict[str, str] = {}
    for name, text in components.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigurationError(
                f"{where}: component name {name!r} is not a plain identifier (letters, digits, _)"
            )
        if not isinstance(text, str):
            raise ConfigurationError(
                f"{where}: component {name!r} must be text, got {type(text).__name__}"
            )
        if not text.strip():
            raise ConfigurationError(f"{where}: component {name!r} is empty")
        out[name] = text.strip("\n")
    if template is not None:
        if not isinstance(template, str) or not template.strip():
            raise ConfigurationError(f"{where}: {TEMPLATE_KEY!r} must be non-empty text")
        unknown = sorted(set(_FIELD.findall(template)) - set(out))
        missing = [name for name in out if "{" + name + "}" not in template]
        if unknown:
            raise ConfigurationError(
                f"{where}: template names unknown component {unknown[0]!r} "
                f"(components: {', '.join(out)})"
            )
        if missing:
            raise ConfigurationError(
                f"{where}: component {missing[0]!r} is not used by the template; "
                f"add {{{missing[0]}}} to {TEMPLATE_KEY!r}"
            )
    return PromptSpec(out, template)


def _read_text(path: Path) -> str:
    problem = file_problem(path, "prompt file")
    if problem is not None:
        raise ConfigurationError(f"{path}: {problem}")
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"{path}: prompt file not found") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"{path}: prompt file is not UTF-8 text") from None
    if "\x00" in text:
        raise ConfigurationError(f"{path}: prompt file looks binary (NUL bytes)")
    return text


def _parse_mapping(path: Path, fmt: str, text: str) -> object:
    try:
        if fmt == "json":
            return json.loads(text)
        if fmt == "toml":
            return importlib.import_module("tomllib").loads(text)
        return importlib.import_module("yaml").safe_load(text)
    except ModuleNotFoundError as exc:
        raise ConfigurationError(
            f"{path}: reading {fmt} prompts needs the {exc.name!r} package; "
            "install it or use a .json prompt file"
        ) from None
    except Exception as exc:  # noqa: BLE001 - each parser has its own error type
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigurationError(f"{path}: not valid {fmt}: {first}") from None


def _load_dir(path: Path) -> PromptSpec:
    files = sorted(p for p in path.glob("*.md") if p.is_file())
    template_file = path / f"{TEMPLATE_KEY}.md"
    components = {p.stem: _read_text(p) for p in files if p != template_file}
    template = _read_text(template_file).strip("\n") if template_file.is_file() else None
    if not components:
        raise ConfigurationError(f"{path}: prompt directory holds no .md component files")
    spec = _check(str(path), components, template)
    return PromptSpec(spec.components, spec.template, "dir")


def load_prompt_file(path: str | Path) -> PromptSpec:
    """Read a prompt file or directory (see the module docstring for the formats)."""
    path = Path(path)
    if path.is_dir():
        return _load_dir(path)
    fmt = _MAPPING_FORMATS.get(path.suffix.lower())
    text = _read_text(path)
    if fmt is None:
        if not text.strip():
            raise ConfigurationError(
                f"{path}: the prompt is empty; write the starting instructions"
            )
        return PromptSpec.single(text.strip("\n"))
    data = _parse_mapping(path, fmt, text)
    if isinstance(data, list) and fmt != "toml":
        return chat_spec(data, str(path))
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{path}: a {fmt} prompt must map component names to texts, got {type(data).__name__}"
        )
    return spec_from_mapping(data, str(path), fmt)


def spec_from_mapping(
    data: Mapping[str, object], where: str = "prompt", fmt: str = "json"
) -> PromptSpec:
    """A spec from ``{name: text, ..., "_template": optional}``; bad input names the component."""
    values = dict(data)
    template = values.pop(TEMPLATE_KEY, None)
    spec = _check(where, values, template)
    return PromptSpec(spec.components, spec.template, fmt)


def chat_spec(messages: object, where: str = "prompt") -> PromptSpec:
    """A chat template (a list of ``{"role", "content"}`` messages) as a PromptSpec."""
    checked = messages_from_data(messages, where)
    names = component_names([m["role"] for m in checked])
    holes = [
        {"role": m["role"], "content": f"{{{n}}}"} for m, n in zip(checked, names, strict=True)
    ]
    components = {n: m["content"] for n, m in zip(names, checked, strict=True)}
    spec = PromptSpec(components, template_text(holes), "chat")
    if spec.messages != checked:  # e.g. a message that is only blank lines inside
        raise ConfigurationError(f"{where}: the chat template does not read back as written")
    return spec


def with_tool_descriptions(spec: PromptSpec, tools: Sequence[Mapping[str, object]]) -> PromptSpec:
    """``spec`` led by the ``<tools>`` section of ``tools`` (:mod:`reflex.data.tool_text`), each
    description one more component (``tool-NAME``, ``param-NAME-PARAM``), after the prompt's."""
    components, section = tools_template(tools)
    clash = sorted(set(components) & set(spec.components))
    if clash:
        raise ConfigurationError(
            f"prompt component {clash[0]!r} clashes with a tool description's name; rename it"
        )
    body = spec.template
    if body is None:
        body = "\n\n".join("{" + name + "}" for name in spec.names)
    return PromptSpec({**spec.components, **components}, f"{section}\n\n{body}", spec.fmt)


def is_components_path(path: Path) -> bool:
    """True for a directory or a .json/.yaml/.yml/.toml file (a multi-component prompt)."""
    return path.is_dir() or path.suffix.lower() in _MAPPING_FORMATS


def write_prompt_file(path: Path, spec: PromptSpec) -> None:
    """Write ``spec`` to ``path`` in ``spec.fmt`` (text writes the assembled prompt)."""
    data: dict[str, str] = dict(spec.components)
    if spec.template is not None:
        data[TEMPLATE_KEY] = spec.template
    if spec.fmt == "dir":
        path.mkdir(parents=True, exist_ok=True)
        for name, text in data.items():
            atomic_write_text(path / f"{name}.md", text + "\n")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.fmt == "chat":
        messages = saved_template(spec.render())
        if messages is not None:
            atomic_write_text(path, json.dumps(messages, indent=2, ensure_ascii=False) + "\n")
            return
    if spec.fmt == "json":
        body = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    elif spec.fmt == "yaml":
        body = importlib.import_module("yaml").safe_dump(data, allow_unicode=True, sort_keys=False)
    elif spec.fmt == "toml":
        body = "".join(f"{name} = {_toml_string(text)}\n" for name, text in data.items())
    else:
        body = spec.render() + "\n"
    atomic_write_text(path, body)


def _toml_string(text: str) -> str:
    # A basic string with JSON escapes is valid TOML for any text (no stdlib TOML writer).
    return json.dumps(text, ensure_ascii=False)


def read_prompt(prompt: str | Path, what: str = "prompt file") -> str:
    """A prompt given as text, or as a Path to a UTF-8 text file; empty prompts are refused.
    ``what`` names the file in errors (e.g. "reasoning template file")."""
    if isinstance(prompt, Path):
        problem = file_problem(prompt, what)  # a FIFO would block the read forever
        if problem is not None:
            raise ConfigurationError(f"{prompt}: {problem}")
        try:
            text = prompt.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise ConfigurationError(f"{prompt}: prompt file not found") from None
        except UnicodeDecodeError:
            raise ConfigurationError(
                f"{prompt}: prompt file is not UTF-8 text; re-save it as UTF-8"
            ) from None
        if "\x00" in text:
            raise ConfigurationError(f"{prompt}: prompt file looks binary (NUL bytes)")
    else:
        text = prompt
    if not text.strip():
        where = f"{prompt}: " if isinstance(prompt, Path) else ""
        raise ConfigurationError(f"{where}the prompt is empty; write the starting instructions")
    return text.strip("\n")


def prompt_spec(prompt: PromptLike) -> PromptSpec:
    """Any accepted prompt as a PromptSpec: text, a prompt file or directory, components, or a
    chat template (a list of messages). A registry URI (``prompts:/cat@production``) is read
    by a plugin: :func:`reflex.run.prompt_sources.prompt_spec` (the builder's) resolves it."""
    if isinstance(prompt, PromptSpec):
        spec = prompt
    elif isinstance(prompt, Sequence) and not isinstance(prompt, str):
        spec = chat_spec(list(prompt))
    elif isinstance(prompt, Mapping):
        spec = spec_from_mapping(prompt)
    elif isinstance(prompt, Path) and is_components_path(prompt):
        spec = load_prompt_file(prompt)
    else:
        spec = PromptSpec.single(read_prompt(prompt))
    problem = check_chat_demos(spec.render())
    if problem is not None:
        where = f"{prompt}: " if isinstance(prompt, Path) else ""
        raise ConfigurationError(f"{where}the prompt is not usable: {problem}")
    return spec
