"""``engine.llm._flat_tables``: a table clipped as one cell per paragraph becomes a Markdown table again,
and nothing else does."""

from __future__ import annotations

from engine.llm._flat_tables import rebuild_flat_tables

HEADER = ["Quality", "Price", "Uses", "Cost per use"]
ROWS = ["Poor", "$5", "10", "$0.50", "Good", "$10", "50", "$0.20", "Best", "$20", "200", "$0.10"]
SOCKS = "\n\n".join([*HEADER, *ROWS])


def test_a_clipped_table_becomes_a_markdown_table() -> None:
    text = f"How long do socks last?\n\n{SOCKS}\n\nNot only will durable socks save you money."
    assert rebuild_flat_tables(text).split("\n") == [
        "How long do socks last?",
        "",
        "| Quality | Price | Uses | Cost per use |",
        "| --- | --- | --- | --- |",
        "| Poor | $5 | 10 | $0.50 |",
        "| Good | $10 | 50 | $0.20 |",
        "| Best | $20 | 200 | $0.10 |",
        "",
        "Not only will durable socks save you money.",
    ]


def test_cells_on_consecutive_lines_and_units_count_as_numbers() -> None:
    text = "Model\nRAM\nPrice\nBasic\n8 GB\n€499\nPro\n16 GB\n€899\n"
    assert rebuild_flat_tables(text).split("\n")[:3] == [
        "| Model | RAM | Price |",
        "| --- | --- | --- |",
        "| Basic | 8 GB | €499 |",
    ]


def test_what_is_not_a_table_is_left_as_it_is() -> None:
    untouched = [
        "Monday\n\nTuesday\n\nWednesday\n\nThursday\n\nFriday\n\nSaturday\n\nSunday\n",  # no numbers
        "Roses are red\nViolets are blue\nSugar is sweet\nAnd so are you\nOne more line\nAnd the last\n",
        "Step 1\n\n5\n\nStep 2\n\n6\n\nStep 3\n\n7\n",  # the header would hold a number
        "- Price\n- $5\n- Size\n- 10\n- Tax\n- 2%\n",  # a list, not cells
        "Price\n\n$5\n\nTotal\n\n$10\n\nName\n\nBob\n",  # no column count where every column is of one kind
        "```\nName\nAge\nBob\n42\nAmy\n37\n```\n",  # code stays code
        "Short.\n",
        "",
    ]
    for text in untouched:
        assert rebuild_flat_tables(text) == text, text


def test_a_header_and_one_row_are_not_enough() -> None:
    text = "\n\n".join(["Name", "Score", "Amy", "1"])  # could be a table, could be two pairs of lines
    assert rebuild_flat_tables(text) == text
    two_rows = "\n\n".join(["Name", "Score", "Amy", "1", "Bob", "2"])
    assert rebuild_flat_tables(two_rows).startswith("| Name | Score |")
