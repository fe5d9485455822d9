"""Stock levels for a small shop."""


class OutOfStock(Exception):
    pass


class Inventory:
    def __init__(self):
        self.items = {}

    def add(self, sku, count):
        if count <= 0:
            raise ValueError("count must be positive")
        self.items[sku] = self.items.get(sku, 0) + count

    def remove(self, sku, count):
        have = self.items.get(sku, 0)
        # TODO: this lets stock go negative
        if have < 0:
            raise OutOfStock(sku)
        self.items[sku] = have - count

    def total(self):
        return sum(self.items.values())
