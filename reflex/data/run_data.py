"""The builder's data side: the rows a run is given and the settings about them.

A dataset (a :class:`Dataset`, a JSONL/CSV path, records, a DataFrame) or pipeline inputs, a
pipeline, and how a chat template's ``{{variables}}`` bind to the rows (at run, before any call:
:meth:`DataSide.bind_template`); the splits, slices, feedback column, tools and answer format.
:class:`reflex.optimizer.PromptOptimizer` is built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reflex.config import SettingsBuilder, default
from reflex.data.dataset import Dataset, bind_dataset, load_dataset
from reflex.data.pipeline import Pipeline, load_inputs, load_pipeline, pipeline_from_function
from reflex.data.prompts import PromptSpec
from reflex.data.templates import check_editable, row_fields
from reflex.data.tool_schemas import check_tool_choice, response_format_setting, tools_setting
from reflex.errors import ConfigurationError, MissingInputError
from reflex.scoring import Metric

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["DataSide"]

_TRAIN, _VAL = default("train_split"), default("val_split")  # set_splits' defaults


class DataSide(SettingsBuilder):
    """The rows of a run and how they are read, bound, split and offered tools (the builder's
    data setters)."""

    def __init__(self) -> None:
        super().__init__()
        self._dataset: Dataset | None = None
        self._pipeline: Pipeline | None = None
        # How the dataset was given (a chat template rebinds its rows at run) and, for rows
        # with no input field, the error to raise when the prompt is no template after all.
        self._dataset_source: tuple[Any, str | None, str | None, str | None] | None = None
        self._missing_input: MissingInputError | None = None

    def set_dataset(
        self,
        data: Dataset | str | Path | Sequence[dict[str, Any]] | Any,
        *,
        input_field: str | None = None,
        output_field: str | None = None,
        name: str | None = None,
    ) -> Self:
        """A Dataset, a JSONL/CSV path, a list of records or a pandas DataFrame.

        Rows for a chat template need no input field: ``run`` binds them to the template's
        variables (see :meth:`set_variables`).
        """
        self._missing_input = None
        if isinstance(data, Dataset):
            self._dataset, self._dataset_source = data, None
            return self
        self._dataset_source = (data, input_field, output_field, name)
        try:
            self._dataset = load_dataset(
                data, input_field=input_field, output_field=output_field, name=name
            )
        except MissingInputError as exc:  # raised at run unless the prompt is a template
            self._dataset, self._missing_input = None, exc
        return self

    def set_variables(self, fields: Mapping[str, str] | None = None, **more: str) -> Self:
        """Which row field fills each chat-template ``{{variable}}`` whose name differs from it
        (``set_variables(question="q")``; CLI ``--var question=q``)."""
        merged = {**self._config.variables, **(fields or {}), **more}
        return self._set(variables=merged)

    def set_rewrite_messages(self, *names: str) -> Self:
        """The chat-template messages strategies may rewrite, by component name (``system``,
        ``user``, ``user_2``...); the others stay as written. None given: all."""
        return self._set(rewrite_messages=list(names) or None)

    def bind_template(self, spec: PromptSpec) -> None:
        """Bind the rows to ``spec``'s variables (a chat template), before anything is paid:
        what ``run`` does first, public for the compare grid, which binds each cell's rows."""
        if not spec.variables:
            if self._missing_input is not None:
                raise self._missing_input
            return
        fields = row_fields(spec.variables, spec.names, self._config.variables)
        check_editable(spec.names, self._config.rewrite_messages)
        if self._dataset_source is not None:
            data, inputs, outputs, name = self._dataset_source
            self._dataset = load_dataset(
                data, input_field=inputs, output_field=outputs, name=name, variables=fields
            )
        elif self._dataset is not None:
            self._dataset = bind_dataset(self._dataset, fields)

    def set_inputs(self, data: str | Path | Sequence[Any]) -> Self:
        """Pipeline inputs: a JSON array / JSONL file, or a list, of strings or ``{input, ...}``.

        References (``ideal``) are optional; see :func:`reflex.data.pipeline.load_inputs`.
        """
        self._dataset = load_inputs(data)
        return self

    def set_pipeline(
        self,
        pipeline: Callable[..., Any] | str | Path,
        *,
        timeout: float | None = None,
        trace_metrics: Sequence[str] = (),
    ) -> Self:
        """Pipeline mode: ``pipeline(prompt, input, call)`` replaces the one task-model call.

        ``pipeline``: a function, or a ``.py`` file (``file.py:name``) defining ``run`` or
        ``pipeline``. ``timeout``: seconds per example (default 60). ``trace_metrics``: metrics
        that score the whole trace instead of the final output. See :mod:`reflex.data.pipeline`.
        """
        if isinstance(pipeline, (str, Path)):
            loaded = load_pipeline(pipeline)
        else:
            loaded = pipeline_from_function(pipeline)
        timeout_setting = {} if timeout is None else {"pipeline_timeout": timeout}
        self._set(
            pipeline=loaded.name,
            pipeline_sha256=loaded.sha256,
            trace_metrics=list(trace_metrics),
            **timeout_setting,
        )
        self._pipeline = loaded
        return self

    def set_splits(
        self, train: float = _TRAIN, val: float = _VAL, *, group_key: str | None = None
    ) -> Self:
        """The fractions of rows for training and validation (the rest is the test split);
        ``group_key``: a metadata key whose rows stay in one split."""
        return self._set(train_split=train, val_split=val, group_key=group_key)

    def set_slices(self, *keys: str) -> Self:
        """Report test scores per group of these metadata keys, baseline vs final."""
        if not all(isinstance(k, str) and k for k in keys):
            raise ConfigurationError(f"slice keys must be non-empty strings, got {keys!r}")
        return self._set(slice_by=list(dict.fromkeys(keys)))

    def set_feedback_field(self, name: str | None) -> Self:
        """A dataset column (e.g. a reviewer's ``critique``) shown to the reasoning model as each
        train row's feedback, never to the task model; None: none. A name no train row has is
        refused when the run starts, before any call."""
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ConfigurationError(f"feedback field must be a column name, got {name!r}")
        return self._set(feedback_field=name.strip() if name else None)

    def set_tools(
        self,
        tools: str | Path | Sequence[Mapping[str, Any]] | None,
        *,
        choice: str | Mapping[str, Any] | None = None,
    ) -> Self:
        """Tools offered with every request: a JSON file or the list of OpenAI function
        schemas (a row's own ``tools`` replace them; None: none), and the tool ``choice``
        (``auto``, ``required``, ``none`` or a function's name; None: the provider's default)."""
        listed = None if tools is None else tools_setting(tools, "set_tools")
        chosen = check_tool_choice(choice, listed, "set_tools(choice=...)")
        return self._set(tools=listed, tool_choice=chosen)

    def set_optimize_tool_descriptions(self, optimize: bool = True) -> Self:
        """Let strategies rewrite the function and parameter descriptions of the tools (the run's
        ``set_tools``, else those the rows offer); names, types, enums and required lists stay
        fixed (:mod:`reflex.data.tool_text`)."""
        return self._set(optimize_tool_descriptions=optimize)

    def set_response_format(self, fmt: str | Path | Mapping[str, Any] | None) -> Self:
        """The answer format asked for: a JSON file or OpenAI's ``{"type": "json_object"}`` /
        ``{"type": "json_schema", "json_schema": {...}}`` (a bare JSON Schema too); None: text."""
        chosen = None if fmt is None else response_format_setting(fmt, "set_response_format")
        return self._set(response_format=chosen)

    def _copy_data(self, other: DataSide) -> None:
        """Give ``other`` these rows, as given (a clone's; the Dataset object is shared)."""
        other._dataset, other._pipeline = self._dataset, self._pipeline
        other._dataset_source, other._missing_input = self._dataset_source, self._missing_input

    def _rows(self) -> Dataset:
        """The rows to run on (a RunConfig is being built): a dataset must have been given."""
        if self._dataset is None and self._missing_input is not None:
            raise self._missing_input
        if self._dataset is None:
            raise ConfigurationError("no dataset: call .set_dataset(path_or_records) first")
        return self._dataset

    def _check_references(self, metrics: Sequence[Metric]) -> None:
        """Rows with no reference answer need a metric that scores without one."""
        rows = self._rows()
        if rows.with_references == 0 and all(m.requires_reference for m in metrics):
            names = ", ".join(m.name for m in metrics)
            raise ConfigurationError(
                f"dataset {rows.name!r} has no reference answers "
                f"but every metric ({names}) needs one: add an 'ideal' "
                "field or use a judge metric"
            )
