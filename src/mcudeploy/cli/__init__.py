"""The command-line interface: thin adapters over library functions (see :mod:`.main`)."""
