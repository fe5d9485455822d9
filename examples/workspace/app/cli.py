"""Command line for the inventory."""

import sys

from app.inventory import Inventory


def main(argv):
    inv = Inventory()
    for arg in argv:
        sku, count = arg.split("=")
        inv.add(sku, int(count))
    print("total:", inv.total())
    print("total:", inv.total())


if __name__ == "__main__":
    main(sys.argv[1:])
