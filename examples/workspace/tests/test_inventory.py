import pytest

from app.inventory import Inventory, OutOfStock


def test_add_and_total():
    inv = Inventory()
    inv.add("apple", 3)
    inv.add("apple", 2)
    assert inv.total() == 5


def test_remove_more_than_stock():
    inv = Inventory()
    inv.add("pear", 1)
    with pytest.raises(OutOfStock):
        inv.remove("pear", 2)
