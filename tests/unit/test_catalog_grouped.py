"""The catalog's reads by many keys: rows grouped under their key, every key asked for answered."""

from headwater.store.catalog import grouped


def test_rows_are_grouped_under_their_key_in_row_order():
    rows = [{"job": "a", "n": 1}, {"job": "b", "n": 2}, {"job": "a", "n": 3}]
    assert grouped(["a", "b"], rows, "job", lambda r: r["n"]) == {"a": [1, 3], "b": [2]}


def test_a_key_no_row_has_is_answered_with_an_empty_list():
    assert grouped(["a", "missing"], [{"job": "a"}], "job", dict) == {"a": [{"job": "a"}], "missing": []}
