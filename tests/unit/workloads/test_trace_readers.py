"""Trace readers: exact times for both Azure timestamp formats, Mooncake and BurstGPT,
and every bad-file error naming the file, the line and the column."""
from __future__ import annotations

from pathlib import Path

import pytest

from scalearena.contracts.errors import UserError
from scalearena.workloads.traces.azure import parse_timestamp_ns, read_azure
from scalearena.workloads.traces.burstgpt import read_burstgpt
from scalearena.workloads.traces.mooncake import read_mooncake

DATA = Path(__file__).resolve().parents[3] / "workloads" / "data"


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_azure_2023_format_exact_times(tmp_path: Path) -> None:
    f = write(tmp_path, "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
              "2023-11-16 18:17:03.9799600,4808,10\n"
              "2023-11-16 18:17:04.0319600,3180,8\n"
              "2023-11-16 18:17:04.0781490,110,27\n")
    rows = list(read_azure(f))
    # 04.0319600 - 03.9799600 = 0.052 s; 04.0781490 - 03.9799600 = 0.098189 s
    assert [r.t_s for r in rows] == [0.0, 0.052, 0.098189]
    assert [(r.input_tokens, r.output_tokens, r.line) for r in rows] == [(4808, 10, 2), (3180, 8, 3), (110, 27, 4)]


def test_azure_2024_format_with_offset_and_missing_fraction(tmp_path: Path) -> None:
    f = write(tmp_path, "b.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
              "2024-05-10 00:00:00.009930+00:00,100,5\n"
              "2024-05-10 00:00:01+00:00,200,6\n"
              "2024-05-10 02:00:01.509930+02:00,300,7\n")
    # 1.000000 - 0.009930 = 0.99007 s; 02:00:01.50993 at +02:00 is 00:00:01.50993 UTC -> 1.5 s
    assert [r.t_s for r in read_azure(f)] == [0.0, 0.99007, 1.5]


def test_azure_times_cross_midnight() -> None:
    a = parse_timestamp_ns("2024-05-10 23:59:59.5+00:00")
    b = parse_timestamp_ns("2024-05-11T00:00:00.5Z")
    assert b - a == 1_000_000_000
    assert parse_timestamp_ns("1970-01-02 00:00:00") == 86_400 * 10**9


def test_shipped_azure_sample() -> None:
    rows = list(read_azure(str(DATA / "azure_code_2023_sample.csv")))
    assert len(rows) == 8819
    # the file's first two rows are 03.9799600 and 04.0319600
    assert rows[1].t_s == 0.052
    # last row 19:14:19.928016, first 18:17:03.97996: 57 min 15.948056 s = 3435.948056 s
    assert rows[-1].t_s == pytest.approx(3435.948056, abs=1e-9)


def test_mooncake_ms_and_hash_ids(tmp_path: Path) -> None:
    f = write(tmp_path, "m.jsonl",
              '{"timestamp": 1000, "input_length": 700, "output_length": 20, "hash_ids": [7, 8]}\n'
              '{"timestamp": 1052, "input_length": 300, "output_length": 10, "hash_ids": [7]}\n'
              "\n"
              '{"timestamp": 2000, "input_length": 50, "output_length": 5}\n')
    rows = list(read_mooncake(f))
    # (1052 - 1000) ms = 0.052 s; (2000 - 1000) ms = 1 s
    assert [r.t_s for r in rows] == [0.0, 0.052, 1.0]
    assert [r.hash_ids for r in rows] == [(7, 8), (7,), ()]
    assert rows[2].line == 4


def test_shipped_mooncake_and_burstgpt_samples() -> None:
    assert len(list(read_mooncake(str(DATA / "mooncake_synthetic_sample.jsonl")))) == 200
    rows = list(read_burstgpt(str(DATA / "burstgpt_synthetic_sample.csv")))
    assert len(rows) == 300 and rows[0].t_s == 0.0
    gpt4 = list(read_burstgpt(str(DATA / "burstgpt_synthetic_sample.csv"), model="GPT-4"))
    assert 0 < len(gpt4) < 300


def test_burstgpt_relative_seconds_and_model_filter(tmp_path: Path) -> None:
    f = write(tmp_path, "g.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
              "5,ChatGPT,100,10,110,Conversation log\n"
              "7,GPT-4,200,0,200,API log\n"
              "12,ChatGPT,300,30,330,Conversation log\n")
    assert [(r.t_s, r.input_tokens, r.output_tokens) for r in read_burstgpt(f)] == [
        (0.0, 100, 10), (2.0, 200, 0), (7.0, 300, 30)]
    assert [r.t_s for r in read_burstgpt(f, model="ChatGPT")] == [0.0, 7.0]


AZ_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
OK_ROW = "2023-11-16 18:17:03.9799600,10,10\n"


@pytest.mark.parametrize(
    ("name", "text", "line", "column"),
    [
        ("missing_col.csv", "TIMESTAMP,ContextTokens\n" + "2023-11-16 18:17:03.9,1\n", 1, "GeneratedTokens"),
        ("bad_ts.csv", AZ_HEAD + OK_ROW + "yesterday,10,10\n", 3, "TIMESTAMP"),
        ("bad_ts2.csv", AZ_HEAD + OK_ROW + "2023-11-16 25:17:03.1,10,10\n", 3, "TIMESTAMP"),
        ("neg.csv", AZ_HEAD + OK_ROW + OK_ROW + "2023-11-16 18:17:05.0,-4,10\n", 4, "ContextTokens"),
        ("nan.csv", AZ_HEAD + OK_ROW + "2023-11-16 18:17:05.0,10,lots\n", 3, "GeneratedTokens"),
        ("short.csv", AZ_HEAD + OK_ROW + "2023-11-16 18:17:05.0,10\n", 3, "GeneratedTokens"),
        ("back.csv", AZ_HEAD + OK_ROW + "2023-11-16 18:17:02.0,10,10\n", 3, "TIMESTAMP"),
    ],
)
def test_azure_bad_files_name_file_line_column(tmp_path: Path, name: str, text: str, line: int, column: str) -> None:
    f = write(tmp_path, name, text)
    with pytest.raises(UserError) as e:
        list(read_azure(f))
    assert f"{f}:{line}:" in str(e.value) and f"column {column!r}" in str(e.value)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{"timestamp": 0, "input_length": 1, "output_length": 1}\n{"timestamp": 5, "input_length": 1}\n',
         2, "output_length"),
        ('{"timestamp": 0, "input_length": 1, "output_length": 1}\n{"timestamp": "soon", "input_length": 1, '
         '"output_length": 1}\n', 2, "timestamp"),
        ('{"timestamp": 0, "input_length": -1, "output_length": 1}\n', 1, "input_length"),
        ('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": "x"}\n', 1, "hash_ids"),
        ('{"timestamp": 0, "input_length": 1, "output_length": 1}\n{oops\n', 2, "(json)"),
    ],
)
def test_mooncake_bad_files(tmp_path: Path, text: str, line: int, column: str) -> None:
    f = write(tmp_path, "bad.jsonl", text)
    with pytest.raises(UserError) as e:
        list(read_mooncake(f))
    assert f"{f}:{line}:" in str(e.value) and f"column {column!r}" in str(e.value)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("Timestamp,Model,Request tokens\n1,ChatGPT,5\n", 1, "Response tokens"),
        ("Timestamp,Model,Request tokens,Response tokens\n1,ChatGPT,5,5\nnoon,ChatGPT,5,5\n", 3, "Timestamp"),
        ("Timestamp,Model,Request tokens,Response tokens\n1,ChatGPT,5,-5\n", 2, "Response tokens"),
    ],
)
def test_burstgpt_bad_files(tmp_path: Path, text: str, line: int, column: str) -> None:
    f = write(tmp_path, "bad.csv", text)
    with pytest.raises(UserError) as e:
        list(read_burstgpt(f))
    assert f"{f}:{line}:" in str(e.value) and f"column {column!r}" in str(e.value)


def test_missing_trace_file_is_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="trace file not found"):
        list(read_azure(str(tmp_path / "nope.csv")))


@pytest.mark.parametrize("content", [
    b"TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\x00\n",  # a body row
    b"TIMESTAMP,Cont\rextTokens,GeneratedTokens\n",  # the header
])
def test_a_row_the_csv_module_refuses_is_a_user_error_naming_the_line(tmp_path: Path, content: bytes) -> None:
    """A carriage return then NUL inside a row raised csv.Error ("new-line character seen in unquoted field"),
    an internal error (exit 3) found by make fuzz's trace family; now one line naming the file and row."""
    (tmp_path / "t.csv").write_bytes(content)
    with pytest.raises(UserError, match=r"t\.csv:\d: not a CSV row: new-line character seen in unquoted field"):
        list(read_azure(str(tmp_path / "t.csv")))
