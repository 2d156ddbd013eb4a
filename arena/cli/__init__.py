"""The ``arena`` command line: ``main`` (the entry point) and one module per command group.

May import every other part of the project; nothing imports it but the entry point and tests.
"""
