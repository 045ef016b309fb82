"""reflex.data.sources: which DATASET strings are source names, and how a source is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reflex import DatasetError, PromptOptimizer, load_dataset
from reflex.api import DatasetSourceRegistrar, hookimpl
from reflex.data.sources import read_source, source_name, split_source


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("mlflow:qa", ("mlflow", "qa")),
        ("mlflow-traces:exp 1?filter=tags.a = 'b'", ("mlflow-traces", "exp 1?filter=tags.a = 'b'")),
        ("data.jsonl", None),
        ("C:\\data\\rows.jsonl", None),  # a Windows drive, not a scheme
        ("s3://bucket/rows.jsonl", None),  # a URL
        ("./mlflow:qa", None),
        ("mlflow:", None),
    ],
)
def test_split_source(text: str, parts: tuple[str, str] | None) -> None:
    assert split_source(text) == parts


def test_source_name_drops_the_query() -> None:
    assert source_name("exp?filter=x") == "exp"
    assert source_name("qa") == "qa"


class Rows:
    """A source whose rows come back in a different order on every read."""

    reads = 0

    @hookimpl
    def register_dataset_sources(self, register: DatasetSourceRegistrar) -> None:
        def read(rest: str) -> list[dict[str, Any]]:
            Rows.reads += 1
            if rest == "empty":
                return []
            rows = [{"id": f"row-{i}", "input": f"q{i}", "ideal": f"a{i}"} for i in range(20)]
            return rows[::-1] if Rows.reads % 2 else rows

        register("rows", read)


def test_a_source_reads_like_records_and_splits_the_same_every_time(
    register_plugin: Any,
) -> None:
    register_plugin(Rows(), name="rows-plugin")
    first, second = load_dataset("rows:any"), load_dataset("rows:any")
    assert first.ids != second.ids and sorted(first.ids) == sorted(second.ids)
    assert first.fingerprint() == second.fingerprint()
    from reflex.data.splits import split_dataset

    a, b = split_dataset(first, seed=3), split_dataset(second, seed=3)
    assert sorted(a.test.ids) == sorted(b.test.ids) and len(a.test) > 0


def test_an_empty_source_is_one_line(register_plugin: Any) -> None:
    register_plugin(Rows(), name="rows-plugin")
    with pytest.raises(DatasetError, match=r"^rows:empty: the source has no rows"):
        read_source("rows:empty")


def test_a_reader_bug_is_named_after_the_source(register_plugin: Any) -> None:
    class Broken:
        @hookimpl
        def register_dataset_sources(self, register: DatasetSourceRegistrar) -> None:
            register("broken", lambda rest: [][1])

    register_plugin(Broken(), name="broken-plugin")
    with pytest.raises(DatasetError, match=r"^broken:x: reading the dataset failed: IndexError"):
        load_dataset("broken:x")


def test_the_builder_takes_a_source_and_records_its_name(register_plugin: Any) -> None:
    register_plugin(Rows(), name="rows-plugin")
    builder = PromptOptimizer().set_dataset("rows:team?x=1")
    config = builder.add_provider("fake", "task").add_metric("exact_match").build_config()
    assert (config.dataset_name, config.dataset_size) == ("team", 20)


def test_an_unknown_source_lists_the_known_ones(register_plugin: Any, tmp_path: Path) -> None:
    register_plugin(Rows(), name="rows-plugin")
    with pytest.raises(DatasetError) as caught:
        load_dataset("nosuch:thing")
    assert str(caught.value).startswith("nosuch:thing: no such file, and no plugin reads")
    assert "rows:" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(DatasetError, match="nosuch:thing: no such file"):  # the builder too
        PromptOptimizer().set_dataset("nosuch:thing")


def test_a_dataset_option_takes_a_source_name_a_file_option_does_not() -> None:
    import click

    from reflex.cli.common import InputFile

    assert InputFile("dataset file", sources=True).convert("mlflow:qa", None, None) == Path(
        "mlflow:qa"
    )
    with pytest.raises(click.BadParameter, match="mlflow:qa: dataset file not found"):
        InputFile("dataset file").convert("mlflow:qa", None, None)
