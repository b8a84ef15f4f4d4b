"""A layered name table behaves as the dict it stands for: through writes, removals, layers on layers, flattening."""

from __future__ import annotations

import random

import pytest

from lsp_hub.index.layered_table import FLATTEN_SHARE, LayeredTable, flat_table


def _check(table: LayeredTable[int], expected: dict[str, int]) -> None:
    assert dict(table.items()) == expected
    assert len(table) == len(expected)
    assert sorted(table) == sorted(expected)
    for key in [*expected, "never-there", "k0", "k999"]:
        assert (key in table) == (key in expected)
        assert table.get(key) == expected.get(key)
        assert table.get(key, -1) == expected.get(key, -1)
        if key in expected:
            assert table[key] == expected[key]
        else:
            with pytest.raises(KeyError):
                table[key]
    assert flat_table(table) == expected and type(flat_table(table)) is dict


@pytest.mark.parametrize("seed", range(5))
def test_random_changes_over_layers_read_as_a_dict_would(seed: int) -> None:
    chooser = random.Random(seed)
    base = {f"k{number}": number for number in range(200)}
    expected = dict(base)
    table: LayeredTable[int] = LayeredTable(base)
    for _round in range(6):  # each round an update layered on the last
        for _step in range(chooser.randint(1, 30)):
            key = f"k{chooser.randint(0, 260)}"
            if chooser.random() < 0.4:
                table.pop(key, None)
                expected.pop(key, None)
            else:
                value = chooser.randint(0, 10_000)
                table[key] = value
                expected[key] = value
        _check(table, expected)
        table = LayeredTable(table)
        _check(table, expected)
    assert base == {f"k{number}": number for number in range(200)}  # the anchor's table is never written


def test_a_layer_on_a_layer_shares_the_base_until_its_changes_grow_then_flattens() -> None:
    base = {f"k{number}": number for number in range(80)}
    first: LayeredTable[int] = LayeredTable(base)
    first["k1"] = -1
    del first["k2"]
    second = LayeredTable(first)
    assert second._base is base  # two levels deep, however many updates
    second["k1"] = -2
    assert first["k1"] == -1 and "k2" not in second  # the earlier layer is its own snapshot's, unchanged
    for number in range(len(base) // FLATTEN_SHARE):
        second[f"new{number}"] = number
    third = LayeredTable(second)
    assert third._base is not base and type(third._base) is dict  # flattened once the changes grew
    assert dict(third.items()) == dict(second.items())
    with pytest.raises(KeyError):
        del third["k2"]
